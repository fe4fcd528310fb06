package vault

import (
	"io/fs"
	"time"

	"golang.org/x/sys/unix"
)

// Chmod sets the permission bits (and setuid, setgid, sticky) of name; a
// symlink has no mode of its own (EOPNOTSUPP).
func (v *Vault) Chmod(name string, mode fs.FileMode) error {
	ref, err := v.resolve(name)
	if err != nil {
		return pathErr("chmod", name, err)
	}
	defer ref.release()
	if err := ref.name.ReadOnly(); err != nil {
		return pathErr("chmod", name, err)
	}
	return pathErr("chmod", name, ref.parent.Chmod(ref.name, unixMode(mode)))
}

// Chtimes sets the access and modification times of name (not following a
// symlink). A zero time leaves that time unchanged.
func (v *Vault) Chtimes(name string, atime, mtime time.Time) error {
	ref, err := v.resolve(name)
	if err != nil {
		return pathErr("chtimes", name, err)
	}
	defer ref.release()
	if err := ref.name.ReadOnly(); err != nil {
		return pathErr("chtimes", name, err)
	}
	ts := [2]unix.Timespec{timespec(atime), timespec(mtime)}
	return pathErr("chtimes", name, ref.parent.Utimens(ref.name, ts))
}

func timespec(t time.Time) unix.Timespec {
	if t.IsZero() {
		return unix.Timespec{Nsec: unix.UTIME_OMIT}
	}
	return unix.NsecToTimespec(t.UnixNano())
}

// Lchown sets the owner and group of name without following a symlink
// (-1 keeps a field). Changing the owner needs the same privilege as on
// the backing file system.
func (v *Vault) Lchown(name string, uid, gid int) error {
	ref, err := v.resolve(name)
	if err != nil {
		return pathErr("lchown", name, err)
	}
	defer ref.release()
	if err := ref.name.ReadOnly(); err != nil {
		return pathErr("lchown", name, err)
	}
	return pathErr("lchown", name, ref.parent.Chown(ref.name, uid, gid))
}
