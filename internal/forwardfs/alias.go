package forwardfs

import (
	"context"
	"hash/fnv"

	"github.com/encryptfs/encryptfs/internal/engine"
	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// newAliasChild is newEntryChild for an alias (a sync tool's conflict copy
// or an undecryptable entry): a node of its own, never the node of another
// name of the same backing inode.
//
// Why: Syncthing makes a conflict copy by renaming the file it replaces
// to "<encname>.sync-conflict-…". The mount may still know that inode
// under the ordinary name; go-fuse would hand back that node (same inode
// number), whose name is the stale ordinary one, and the copy would be
// resolved through it and not be found (ENOENT). An alias node is keyed
// by the backing inode and a generation derived from its backing name,
// so it is shared with no ordinary node and with no other alias; it still
// shows the backing inode number and opens the same backing file.
//
// Symlinks already get an identity of their own in newChild (their
// backing inode changes with every rename), so they go through it.
func (n *node) newAliasChild(ctx context.Context, st *unix.Stat_t, nm engine.Name, out *fuse.EntryOut) *fs.Inode {
	var child *fs.Inode
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		child = n.newChild(ctx, st, nil, out, nm.Plain)
	} else {
		n.r.fillAttr(st, &out.Attr, nil, func() string { return nm.Plain })
		h := fnv.New64a()
		h.Write([]byte(nm.Backing))
		id := fs.StableAttr{Mode: st.Mode & unix.S_IFMT, Ino: st.Ino, Gen: h.Sum64() | 1}
		child = n.NewInode(ctx, n.r.newNode(nil), id)
	}
	cn := child.Operations().(nodeOps).self()
	cn.alias.Store(true)
	cn.maskAlias(&out.Attr)
	return child
}
