package reversefs_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/encryptfs/encryptfs/internal/crypto/names"
	"github.com/encryptfs/encryptfs/internal/reversefs"
)

// virtualInos returns the inode numbers of the virtual files of the view
// mounted at mnt: encryptfs.conf and the root's encryptfs.dirid (relative
// paths "" for both objects).
func virtualInos(t *testing.T, mnt string) map[string]uint64 {
	t.Helper()
	out := map[string]uint64{}
	for _, n := range []string{names.ConfigFile, names.DirIDFile} {
		fi, err := os.Lstat(filepath.Join(mnt, n))
		if err != nil {
			t.Fatal(err)
		}
		out[n] = fi.Sys().(*syscall.Stat_t).Ino
	}
	return out
}

// TestInodeNumbersKeyed: virtual files' inode numbers are the same on every
// mount with the same key, differ under another key, have bit 63 set and
// are not the unkeyed FNV-64a of the path any more.
func TestInodeNumbersKeyed(t *testing.T) {
	plain := t.TempDir()
	makeTree(t, plain)
	c, master := initPlain(t, plain)
	mnt1, unmount1 := mountView(t, plain, c, master, reversefs.Options{})
	first := virtualInos(t, mnt1)
	unmount1()
	mnt2, unmount2 := mountView(t, plain, c, master, reversefs.Options{})
	second := virtualInos(t, mnt2)
	unmount2()
	for n, ino := range first {
		if second[n] != ino {
			t.Errorf("%s: inode %#x on the first mount, %#x on the second", n, ino, second[n])
		}
		if ino&reversefs.VirtualIno == 0 {
			t.Errorf("%s: inode %#x has bit 63 clear", n, ino)
		}
		if ino == reversefs.UnkeyedVirtualIno(n) {
			t.Errorf("%s: inode %#x is the unkeyed FNV-64a of its path", n, ino)
		}
	}

	// The same plaintext tree under another reverse key.
	other := t.TempDir()
	makeTree(t, other)
	c2, master2 := initPlain(t, other)
	mnt3, _ := mountView(t, other, c2, master2, reversefs.Options{})
	third := virtualInos(t, mnt3)
	for n, ino := range first {
		if third[n] == ino {
			t.Errorf("%s: same inode %#x under two keys", n, ino)
		}
	}
}
