package vault

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// Extended attributes: only the "user." namespace is stored (encrypted
// names and values, bound to the file or directory). Other types of entry
// have none (ENOTSUP).

// GetXattr returns the value of attribute attr of name.
func (v *Vault) GetXattr(name, attr string) ([]byte, error) {
	var val []byte
	err := v.withObject(name, false, func(fd int, id []byte) error {
		if id == nil {
			return unix.ENODATA // an empty file without a header has none
		}
		var err error
		val, err = v.tree.GetXattr(fd, id, attr)
		return err
	})
	return val, pathErr("getxattr", name, err)
}

// SetXattr sets attribute attr of name to value.
func (v *Vault) SetXattr(name, attr string, value []byte) error {
	err := v.withObject(name, true, func(fd int, id []byte) error {
		return v.tree.SetXattr(fd, id, attr, value, 0)
	})
	return pathErr("setxattr", name, err)
}

// RemoveXattr removes attribute attr of name.
func (v *Vault) RemoveXattr(name, attr string) error {
	err := v.withObject(name, false, func(fd int, id []byte) error {
		if id == nil {
			return unix.ENODATA
		}
		return v.tree.RemoveXattr(fd, id, attr)
	})
	return pathErr("removexattr", name, err)
}

// ListXattr lists the attribute names of name. Attributes that fail to
// decrypt are reported with ErrCorrupt after the others.
func (v *Vault) ListXattr(name string) ([]string, error) {
	var list []string
	err := v.withObject(name, false, func(fd int, id []byte) error {
		if id == nil {
			return nil
		}
		l, bad, err := v.tree.ListXattr(fd, id)
		list = l
		if err == nil && len(bad) > 0 {
			err = ErrCorrupt
		}
		return err
	})
	return list, pathErr("listxattr", name, err)
}

// withObject calls fn with a backing fd of name and its object ID (a
// directory's ID; a regular file's ID, created first if write and the
// file is empty, else nil for a file without header).
func (v *Vault) withObject(name string, write bool, fn func(fd int, id []byte) error) error {
	fi, err := v.stat(name)
	if err != nil {
		return err
	}
	switch {
	case fi.IsDir():
		d, err := v.openDir(split(name))
		if err != nil {
			return err
		}
		defer d.release()
		return fn(d.fd, d.id)
	case fi.Mode().IsRegular():
		flag := os.O_RDONLY
		if write {
			flag = os.O_RDWR
		}
		f, err := v.openFile(name, flag, 0)
		if err != nil {
			return err
		}
		var id []byte
		if write {
			fid, err := f.oi.cf.EnsureID()
			if err != nil {
				f.Close()
				return err
			}
			id = fid[:]
		} else if fid, ok := f.oi.cf.ID(); ok {
			id = fid[:]
		}
		err = fn(int(f.oi.backing.Fd()), id)
		return errors.Join(err, closeQuiet(f))
	}
	return unix.ENOTSUP
}

func closeQuiet(f *File) error {
	if err := f.Close(); err != nil && !errors.Is(err, ErrClosed) {
		return err
	}
	return nil
}
