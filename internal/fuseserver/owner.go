package fuseserver

import "github.com/hanwen/go-fuse/v2/fuse"

// ApplyOwner shows o as out's owner (mount --force-owner, parsed by
// internal/mount); a nil o leaves out as it is. Both FUSE frontends call
// it on every attribute they return.
func ApplyOwner(o *fuse.Owner, out *fuse.Attr) {
	if o != nil {
		out.Uid, out.Gid = o.Uid, o.Gid
	}
}
