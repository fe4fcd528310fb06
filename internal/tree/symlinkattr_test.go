package tree

import (
	"os"
	"strings"
	"testing"

	"github.com/encryptfs/encryptfs/internal/backing"
	"golang.org/x/sys/unix"
)

// TestRenameKeepsSymlinkAttrs: a renamed symlink is re-created in the
// backing store (its target is bound to its name), and the new link keeps
// the old one's owner, atime and mtime, as rename(2) does: within a
// directory, into another one, over an existing symlink and in an exchange,
// for inline and sidecar (long) targets.
func TestRenameKeepsSymlinkAttrs(t *testing.T) {
	uid, gid := uint32(os.Geteuid()), uint32(os.Getegid())
	if uid == 0 {
		uid, gid = 65534, 65533 // root can give the link away
	}
	times := func(k int64) [2]unix.Timespec {
		return [2]unix.Timespec{{Sec: 978307200 + k, Nsec: 123}, {Sec: 1009843200 + k, Nsec: 456}}
	}
	for _, target := range []string{"short", strings.Repeat("T", 4000)} {
		tr, _, root, id := newTestTree(t)
		sub := mustName(t, tr, id, "sub")
		subID, err := tr.Mkdir(NewDir(root, nil, nil), sub, 0o700)
		must(t, err)
		subfd, err := backing.OpenSubdir(root, sub.Backing)
		must(t, err)
		t.Cleanup(func() { backing.Close(subfd) })
		mk := func(fd int, dirID []byte, plain string, k int64) Name {
			n := mustName(t, tr, dirID, plain)
			must(t, tr.Symlink(NewDir(fd, dirID, nil), n, target+plain))
			must(t, backing.Fchownat(fd, n.Backing, int(uid), int(gid)))
			must(t, backing.UtimesNanoAt(fd, n.Backing, times(k)))
			return n
		}
		check := func(what string, fd int, dirID []byte, n Name, wantTarget string, k int64) {
			t.Helper()
			st, err := backing.Fstatat(fd, n.Backing)
			must(t, err)
			want := times(k)
			if st.Uid != uid || st.Gid != gid {
				t.Errorf("%s (target %d bytes): owner %d:%d, want %d:%d", what, len(target), st.Uid, st.Gid, uid, gid)
			}
			if st.Atim != want[0] || st.Mtim != want[1] {
				t.Errorf("%s (target %d bytes): atime %v mtime %v, want %v %v", what, len(target), st.Atim, st.Mtim, want[0], want[1])
			}
			if got, err := tr.Symlinks().Readlink(NewDir(fd, dirID, nil), n); err != nil || got != wantTarget {
				t.Errorf("%s: target %.20q, %v", what, got, err)
			}
			// The read moved the atime (relatime): put it back.
			must(t, backing.UtimesNanoAt(fd, n.Backing, want))
		}
		a := mk(root, id, "a", 1)
		a2 := mustName(t, tr, id, "a2")
		must(t, tr.Rename(NewDir(root, id, nil), a, NewDir(root, id, nil), a2, 0))
		check("rename in one directory", root, id, a2, target+"a", 1)

		a3 := mustName(t, tr, subID, "a3")
		must(t, tr.Rename(NewDir(root, id, nil), a2, NewDir(subfd, subID, nil), a3, unix.RENAME_NOREPLACE))
		check("rename into another directory", subfd, subID, a3, target+"a", 1)

		b := mk(root, id, "b", 2)
		must(t, tr.Rename(NewDir(subfd, subID, nil), a3, NewDir(root, id, nil), b, 0))
		check("rename over a symlink", root, id, b, target+"a", 1)

		c := mk(subfd, subID, "c", 3)
		must(t, tr.Rename(NewDir(root, id, nil), b, NewDir(subfd, subID, nil), c, unix.RENAME_EXCHANGE))
		check("exchange, first", subfd, subID, c, target+"a", 1)
		check("exchange, second", root, id, b, target+"c", 3)
	}
}
