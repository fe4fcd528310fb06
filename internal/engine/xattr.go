package engine

import (
	"github.com/encryptfs/encryptfs/internal/backing"
	"golang.org/x/sys/unix"
)

// Object is a file or directory whose extended attributes are read and
// written: its backing fd and object ID (a directory's ID, a file's ID),
// which the attributes' names and values are bound to. A file without a
// header has no ID (HasID is false) and no attributes.
type Object struct {
	v  *Vault
	fd int
	id []byte
	// f is the open file, dir set for a directory (else fd's type says,
	// ObjectAt): whose entry a change of its attributes is told at.
	f   *File
	dir bool
}

// Object is d's attributes.
func (d *Dir) Object() Object { return Object{v: d.v, fd: d.fd, id: d.id, dir: true} }

// Object is f's attributes; with create, a file without a header gets one
// first (so that it has an ID to bind them to).
func (f *File) Object(create bool) (Object, error) {
	o := Object{v: f.v, fd: f.fd, f: f}
	if create {
		id, err := f.EnsureID()
		if err != nil {
			return Object{}, err
		}
		o.id = id
	} else if id, ok := f.ID(); ok {
		o.id = id
	}
	return o, nil
}

// HasID reports whether the object has an ID (and so may have attributes).
func (o Object) HasID() bool { return o.id != nil }

// GetXattr returns the value of attribute name.
func (o Object) GetXattr(name string) ([]byte, error) { return o.v.tree.Xattrs().Get(o.fd, o.id, name) }

// SetXattr sets attribute name to value (flags: XATTR_CREATE,
// XATTR_REPLACE).
func (o Object) SetXattr(name string, value []byte, flags int) error {
	err := o.v.tree.Xattrs().Set(o.fd, o.id, name, value, flags)
	if err == nil {
		o.changed()
	}
	return err
}

// RemoveXattr removes attribute name.
func (o Object) RemoveXattr(name string) error {
	err := o.v.tree.Xattrs().Remove(o.fd, o.id, name)
	if err == nil {
		o.changed()
	}
	return err
}

// changed tells the change of the object's attributes: at its entry, a
// directory's as the locator knows it, a file's at its places.
func (o Object) changed() {
	c := o.v.changes
	if c == nil {
		return
	}
	f, dir := o.f, o.dir
	if f == nil && !dir {
		st, err := backing.Fstat(o.fd)
		if err != nil {
			return
		}
		dir = st.Mode&unix.S_IFMT == unix.S_IFDIR
		if !dir {
			if f, _ = o.v.files.Lookup(FileKey{Dev: uint64(st.Dev), Ino: st.Ino}); f == nil {
				c.c.All() // a file open outside the table: not known where
				return
			}
			defer f.Release()
		}
	}
	if dir {
		c.self(o.id)
		return
	}
	f.places.each(func(l dirLink) { c.c.Touched([]byte(l.parent), l.name) })
}

// ListXattr lists the attribute names, and apart the backing names of
// those that fail to decrypt.
func (o Object) ListXattr() (list, bad []string, err error) {
	return o.v.tree.Xattrs().List(o.fd, o.id)
}
