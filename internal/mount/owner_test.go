package mount_test

import (
	"testing"

	"github.com/encryptfs/encryptfs/internal/mount"
)

// TestParseOwner: --force-owner takes two numbers, UID:GID, each up to
// 32 bits; anything else is refused.
func TestParseOwner(t *testing.T) {
	o, err := mount.ParseOwner("1234:5678")
	if err != nil || *o != (mount.Owner{UID: 1234, GID: 5678}) {
		t.Fatalf("ParseOwner(1234:5678) = %v, %v", o, err)
	}
	for _, bad := range []string{"", "1234", "1234:", ":5678", "a:b", "-1:0", "4294967296:0", "1:2:3"} {
		if o, err := mount.ParseOwner(bad); err == nil {
			t.Errorf("ParseOwner(%q) = %v, want an error", bad, o)
		}
	}
}

// TestParseTransport: the --transport values; "" is auto.
func TestParseTransport(t *testing.T) {
	for in, want := range map[string]mount.Transport{"": mount.TransportAuto, "auto": mount.TransportAuto, "uring": mount.TransportURing, "classic": mount.TransportClassic} {
		if got, err := mount.ParseTransport(in); err != nil || got != want {
			t.Errorf("ParseTransport(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := mount.ParseTransport("io_uring"); err == nil {
		t.Error("ParseTransport(io_uring) accepted")
	}
}
