package vault

import (
	"errors"
	"os"

	"github.com/encryptfs/encryptfs/internal/engine"
	"golang.org/x/sys/unix"
)

// Extended attributes: only the "user." namespace is stored (encrypted
// names and values, bound to the file or directory). Other types of entry
// have none (ENOTSUP).

// GetXattr returns the value of attribute attr of name.
func (v *Vault) GetXattr(name, attr string) ([]byte, error) {
	var val []byte
	err := v.withObject(name, false, func(o engine.Object) error {
		if !o.HasID() {
			return unix.ENODATA // an empty file without a header has none
		}
		var err error
		val, err = o.GetXattr(attr)
		return err
	})
	return val, pathErr("getxattr", name, err)
}

// SetXattr sets attribute attr of name to value.
func (v *Vault) SetXattr(name, attr string, value []byte) error {
	err := v.withObject(name, true, func(o engine.Object) error {
		return o.SetXattr(attr, value, 0)
	})
	return pathErr("setxattr", name, err)
}

// RemoveXattr removes attribute attr of name.
func (v *Vault) RemoveXattr(name, attr string) error {
	err := v.withObject(name, false, func(o engine.Object) error {
		if !o.HasID() {
			return unix.ENODATA
		}
		return o.RemoveXattr(attr)
	})
	return pathErr("removexattr", name, err)
}

// ListXattr lists the attribute names of name. Attributes that fail to
// decrypt are reported with ErrCorrupt after the others.
func (v *Vault) ListXattr(name string) ([]string, error) {
	var list []string
	err := v.withObject(name, false, func(o engine.Object) error {
		if !o.HasID() {
			return nil
		}
		l, bad, err := o.ListXattr()
		list = l
		if err == nil && len(bad) > 0 {
			err = ErrCorrupt
		}
		return err
	})
	return list, pathErr("listxattr", name, err)
}

// withObject calls fn with the attributes of name (engine.Object): a
// directory's, bound to its ID; a regular file's, bound to its ID, which
// is created first if write and the file is empty (else a file without
// header has none).
func (v *Vault) withObject(name string, write bool, fn func(o engine.Object) error) error {
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
		defer d.Close()
		return fn(d.Object())
	case fi.Mode().IsRegular():
		flag := os.O_RDONLY
		if write {
			flag = os.O_RDWR
		}
		f, err := v.openFile(name, flag, 0)
		if err != nil {
			return err
		}
		o, err := f.ef.Object(write)
		if err != nil {
			f.Close()
			return err
		}
		err = fn(o)
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
