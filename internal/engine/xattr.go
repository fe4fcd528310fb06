package engine

// Object is a file or directory whose extended attributes are read and
// written: its backing fd and object ID (a directory's ID, a file's ID),
// which the attributes' names and values are bound to. A file without a
// header has no ID (HasID is false) and no attributes.
type Object struct {
	v  *Vault
	fd int
	id []byte
}

// Object is d's attributes.
func (d *Dir) Object() Object { return Object{v: d.v, fd: d.fd, id: d.id} }

// Object is f's attributes; with create, a file without a header gets one
// first (so that it has an ID to bind them to).
func (f *File) Object(create bool) (Object, error) {
	o := Object{v: f.v, fd: f.fd}
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
	return o.v.tree.Xattrs().Set(o.fd, o.id, name, value, flags)
}

// RemoveXattr removes attribute name.
func (o Object) RemoveXattr(name string) error { return o.v.tree.Xattrs().Remove(o.fd, o.id, name) }

// ListXattr lists the attribute names, and apart the backing names of
// those that fail to decrypt.
func (o Object) ListXattr() (list, bad []string, err error) {
	return o.v.tree.Xattrs().List(o.fd, o.id)
}
