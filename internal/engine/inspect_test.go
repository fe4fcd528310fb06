package engine_test

import (
	"testing"

	"github.com/encryptfs/encryptfs/internal/crypto/bind"
	"github.com/encryptfs/encryptfs/internal/engine"
)

// TestClassifyName pins what fsck is told a name that is no entry is,
// in the root and below it (the vault-wide files live in the root only).
func TestClassifyName(t *testing.T) {
	links := bind.LinksName(make([]byte, bind.IDSize))
	for _, c := range []struct {
		name   string
		isRoot bool
		want   engine.NameClass
	}{
		{"encryptfs.dirid", false, engine.NameDirID},
		{"encryptfs.dirid", true, engine.NameDirID},
		{"encryptfs.conf", true, engine.NameConfig},
		{"encryptfs.conf.bak", true, engine.NameConfig},
		{"encryptfs.conf", false, engine.NameReserved},
		{"encryptfs.upgrade", true, engine.NameUpgradeMarker},
		{"encryptfs.upgrade.tmp", true, engine.NameUpgradeMarker},
		{"encryptfs.conf.tmp", true, engine.NameConfigTemp},
		{"encryptfs.conf.tmp", false, engine.NameReserved},
		{"encryptfs.tmp.x", false, engine.NameTemp},
		{"encryptfs.link.x", false, engine.NameSymlinkSidecar},
		{links, true, engine.NameLinks},
		{links, false, engine.NameReserved},
		{"encryptfs.whatever", false, engine.NameReserved},
	} {
		if got := engine.ClassifyName(c.name, c.isRoot); got != c.want {
			t.Errorf("ClassifyName(%q, root %v) = %d, want %d", c.name, c.isRoot, got, c.want)
		}
	}
	if _, ok := engine.LinksFileOf(links); !ok {
		t.Errorf("LinksFileOf(%q) is not a links file", links)
	}
}
