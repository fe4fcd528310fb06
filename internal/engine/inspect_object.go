package engine

import "github.com/encryptfs/encryptfs/internal/backing"

// InspectObject is one object of CIPHERDIR (a file or directory) open
// as an fd, with its ID (a file's header's file ID, a directory's ID),
// as an offline check reads its xattrs: decrypted, or raw when the
// object has no ID to check them against.
type InspectObject struct {
	i  *Inspector
	fd int
	id []byte
}

// Object is the object open as fd (the caller's) with ID id.
func (i *Inspector) Object(fd int, id []byte) *InspectObject {
	return &InspectObject{i: i, fd: fd, id: id}
}

// Object is d itself as an object, with d's ID.
func (d *InspectDir) Object() *InspectObject { return d.i.Object(d.fd(), d.d.ID()) }

// ListXattr lists the object's xattrs, and apart the backing names that
// do not decrypt.
func (o *InspectObject) ListXattr() (list, bad []string, err error) {
	return o.i.v.tree.Xattrs().List(o.fd, o.id)
}

// GetXattr decrypts the object's xattr name.
func (o *InspectObject) GetXattr(name string) ([]byte, error) {
	return o.i.v.tree.Xattrs().Get(o.fd, o.id, name)
}

// ListRawXattrs lists the backing names of the object's xattrs (through
// internal/backing).
func (o *InspectObject) ListRawXattrs() ([]string, error) { return backing.Flistxattr(o.fd) }
