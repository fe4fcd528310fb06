package mount

import "github.com/encryptfs/encryptfs/internal/fuseuring"

// Transport chooses how FUSE requests reach the daemon (mount
// --transport): a mount option, parsed here, served by internal/fuseuring.
type Transport = fuseuring.Mode

// The transports.
const (
	TransportAuto    = fuseuring.Auto    // io_uring when the kernel offers it, else classic
	TransportURing   = fuseuring.URing   // io_uring or fail
	TransportClassic = fuseuring.Classic // read/writev on /dev/fuse
)

// ParseTransport parses "auto", "uring" or "classic"; "" is auto.
func ParseTransport(s string) (Transport, error) {
	return fuseuring.ParseMode(s)
}
