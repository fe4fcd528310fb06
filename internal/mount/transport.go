package mount

import "github.com/encryptfs/encryptfs/internal/transport"

// Transport chooses how FUSE requests reach the daemon (mount
// --transport): a mount option, parsed here, served by internal/transport.
type Transport = transport.Mode

// The transports.
const (
	TransportAuto    = transport.Auto    // io_uring when the kernel offers it, else classic
	TransportURing   = transport.URing   // io_uring or fail
	TransportClassic = transport.Classic // read/writev on /dev/fuse
)

// ParseTransport parses "auto", "uring" or "classic"; "" is auto.
func ParseTransport(s string) (Transport, error) {
	return transport.ParseMode(s)
}
