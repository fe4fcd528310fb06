package mounttest

import (
	"bytes"
	"context"
	"maps"
	"slices"
	"sync"
	"syscall"
	"testing"

	"github.com/encryptfs/encryptfs/internal/fstest"
	"github.com/hanwen/go-fuse/v2/fs"
	"golang.org/x/sys/unix"
)

// NoXattrDir mounts a loopback view of a new empty directory whose every
// xattr call fails the way an rclone mount's do (rclone 1.60, any remote):
// EOPNOTSUPP on directories, EIO on files. It returns the view's path,
// unmounted in t.Cleanup; call it before mounting a vault on the view, so
// that the vault is unmounted first.
func NoXattrDir(t testing.TB) string { return loopback(t, noXattrs{}) }

// ManyXattrDir mounts a loopback view of a new empty directory that keeps
// xattrs in memory without a limit on their number, as XFS and btrfs do
// (tmpfs since Linux 6.6 refuses an xattr that would make the list longer
// than listxattr can return; these do not). It returns the view's path,
// unmounted in t.Cleanup; call it before mounting a vault on the view.
func ManyXattrDir(t testing.TB) string {
	return loopback(t, &memXattrs{m: map[uint64]map[string][]byte{}})
}

// xattrs is what a loopback view does for the xattr calls of node n.
type xattrs interface {
	get(n *fs.Inode, attr string, dest []byte) (uint32, syscall.Errno)
	set(n *fs.Inode, attr string, data []byte, flags uint32) syscall.Errno
	remove(n *fs.Inode, attr string) syscall.Errno
	list(n *fs.Inode, dest []byte) (uint32, syscall.Errno)
}

// loopback mounts a loopback view of a new empty directory with xattr
// calls answered by x, and returns the view's path (unmounted in
// t.Cleanup).
func loopback(t testing.TB, x xattrs) string {
	t.Helper()
	fstest.RequireFUSE(t)
	under, view := t.TempDir(), t.TempDir()
	root, err := fs.NewLoopbackRoot(under)
	Must(t, err)
	Track(view)
	srv, err := fs.Mount(view, &xattrNode{root.(*fs.LoopbackNode), x}, &fs.Options{})
	if err != nil {
		t.Fatalf("mount a loopback view: %v", err)
	}
	t.Cleanup(func() {
		if err := srv.Unmount(); err != nil {
			t.Errorf("unmount the loopback view: %v", err)
		}
	})
	return view
}

// xattrNode is a loopback node whose xattr calls go to x.
type xattrNode struct {
	*fs.LoopbackNode
	x xattrs
}

// WrapChild gives every child node the same xattrs.
func (n *xattrNode) WrapChild(_ context.Context, ops fs.InodeEmbedder) fs.InodeEmbedder {
	return &xattrNode{ops.(*fs.LoopbackNode), n.x}
}

func (n *xattrNode) Getxattr(_ context.Context, attr string, dest []byte) (uint32, syscall.Errno) {
	return n.x.get(n.EmbeddedInode(), attr, dest)
}

func (n *xattrNode) Setxattr(_ context.Context, attr string, data []byte, flags uint32) syscall.Errno {
	return n.x.set(n.EmbeddedInode(), attr, data, flags)
}

func (n *xattrNode) Removexattr(_ context.Context, attr string) syscall.Errno {
	return n.x.remove(n.EmbeddedInode(), attr)
}

func (n *xattrNode) Listxattr(_ context.Context, dest []byte) (uint32, syscall.Errno) {
	return n.x.list(n.EmbeddedInode(), dest)
}

// noXattrs fails like rclone: EOPNOTSUPP on directories, EIO on files.
type noXattrs struct{}

func fail(n *fs.Inode) syscall.Errno {
	if n.IsDir() {
		return syscall.EOPNOTSUPP
	}
	return syscall.EIO
}

func (noXattrs) get(n *fs.Inode, _ string, _ []byte) (uint32, syscall.Errno) { return 0, fail(n) }
func (noXattrs) set(n *fs.Inode, _ string, _ []byte, _ uint32) syscall.Errno { return fail(n) }
func (noXattrs) remove(n *fs.Inode, _ string) syscall.Errno                  { return fail(n) }
func (noXattrs) list(n *fs.Inode, _ []byte) (uint32, syscall.Errno)          { return 0, fail(n) }

// memXattrs keeps every inode's xattrs in memory, by inode number (so
// that a node the kernel forgot and looked up again keeps them).
type memXattrs struct {
	mu sync.Mutex
	m  map[uint64]map[string][]byte
}

func (s *memXattrs) get(n *fs.Inode, attr string, dest []byte) (uint32, syscall.Errno) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[n.StableAttr().Ino][attr]
	if !ok {
		return 0, syscall.ENODATA
	}
	if len(dest) < len(v) {
		return uint32(len(v)), syscall.ERANGE
	}
	return uint32(copy(dest, v)), 0
}

func (s *memXattrs) set(n *fs.Inode, attr string, data []byte, flags uint32) syscall.Errno {
	s.mu.Lock()
	defer s.mu.Unlock()
	ino := n.StableAttr().Ino
	if s.m[ino] == nil {
		s.m[ino] = map[string][]byte{}
	}
	_, ok := s.m[ino][attr]
	switch {
	case ok && flags&unix.XATTR_CREATE != 0:
		return syscall.EEXIST
	case !ok && flags&unix.XATTR_REPLACE != 0:
		return syscall.ENODATA
	}
	s.m[ino][attr] = bytes.Clone(data)
	return 0
}

func (s *memXattrs) remove(n *fs.Inode, attr string) syscall.Errno {
	s.mu.Lock()
	defer s.mu.Unlock()
	ino := n.StableAttr().Ino
	if _, ok := s.m[ino][attr]; !ok {
		return syscall.ENODATA
	}
	delete(s.m[ino], attr)
	return 0
}

func (s *memXattrs) list(n *fs.Inode, dest []byte) (uint32, syscall.Errno) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var list []byte
	for _, a := range slices.Sorted(maps.Keys(s.m[n.StableAttr().Ino])) {
		list = append(append(list, a...), 0)
	}
	if len(dest) < len(list) {
		return uint32(len(list)), syscall.ERANGE
	}
	return uint32(copy(dest, list)), 0
}
