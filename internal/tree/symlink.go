package tree

import (
	"errors"
	"fmt"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/crypto/meta"
	"golang.org/x/sys/unix"
)

// longTargetMarker is the backing target of a symlink whose encrypted target
// lives in a sidecar file.
const longTargetMarker = meta.LongSymlinkMarker

// linkSidecarSize bounds a long-target sidecar: a 4095-byte target sealed
// with a 24-byte nonce and a 16-byte tag.
const linkSidecarSize = 8 << 10

// sealTarget encrypts target bound to (dirID, plain name).
func (t *Tree) sealTarget(dirID []byte, n Name, target string) (backingTarget string, blob []byte, sidecar bool, err error) {
	blob, err = t.links.Seal(dirID, n.boundName(), target, t.rand)
	if err != nil {
		return "", nil, false, err
	}
	backingTarget, sidecar = meta.EncodeTarget(blob)
	return backingTarget, blob, sidecar, nil
}

// Symlink creates symlink n in dirfd (directory ID dirID) pointing to target.
func (t *Tree) Symlink(dirfd int, dirID []byte, n Name, target string) error {
	bt, blob, side, err := t.sealTarget(dirID, n, target)
	if err != nil {
		return err
	}
	created, err := t.WriteSidecar(dirfd, n)
	if err != nil {
		return err
	}
	undo := func() {
		if created {
			t.RemoveSidecar(dirfd, n)
		}
	}
	if side {
		if _, err := backing.Fstatat(dirfd, n.Backing); err == nil {
			undo()
			return ErrExists
		}
		if err := t.writeLinkSidecar(dirfd, n.Backing, blob); err != nil {
			undo()
			return err
		}
	}
	if err := t.fs.Symlinkat(bt, dirfd, n.Backing); err != nil {
		if side && !errors.Is(err, unix.EEXIST) {
			t.removeLinkSidecar(dirfd, n.Backing)
		}
		undo()
		return err
	}
	return nil
}

// writeLinkSidecar stores a long target's blob for backing entry name,
// replacing any previous sidecar atomically (temp file, then rename).
func (t *Tree) writeLinkSidecar(dirfd int, name string, blob []byte) error {
	tmp, err := t.tempName()
	if err != nil {
		return err
	}
	// Durable before the symlink that needs it is made: a long-target
	// symlink whose sidecar a crash lost has lost its target (found by
	// internal/crashsim's replay, "untar": symlink with a long target).
	if err := t.fs.ReplaceFile(dirfd, tmp, dirfd, meta.SymlinkSidecarName(name), blob, 0o400, backing.ReplaceSyncDir); err != nil {
		return fmt.Errorf("tree: write symlink sidecar: %w", err)
	}
	return nil
}

// dropLinkSidecar removes the long-target sidecar of backing entry name
// of dirfd, if there is one, after the change that made it unused (an
// unlink or rename of the link in dirfd, a rename onto it) was made
// durable by an fsync of syncfd: if the removal survived a crash that the
// change did not, the old symlink would be back without its target (found
// by internal/crashsim's replay, "renames"). A short-target link pays one
// fstatat; a long one a directory fsync.
func (t *Tree) dropLinkSidecar(dirfd int, name string, syncfd int) error {
	if _, err := backing.Fstatat(dirfd, meta.SymlinkSidecarName(name)); err != nil {
		return nil
	}
	if err := t.fs.Fsync(syncfd); err != nil {
		return err
	}
	t.removeLinkSidecar(dirfd, name)
	return nil
}

// removeLinkSidecar removes the long-target sidecar of backing entry name,
// if there is one.
func (t *Tree) removeLinkSidecar(dirfd int, name string) {
	t.fs.Unlinkat(dirfd, meta.SymlinkSidecarName(name), 0)
}

// Readlink decrypts the target of symlink n in dirfd (directory ID dirID).
// A target that fails authentication gives meta.ErrCorrupt.
func (t *Tree) Readlink(dirfd int, dirID []byte, n Name) (string, error) {
	bt, err := backing.Readlinkat(dirfd, n.Backing)
	if err != nil {
		return "", err
	}
	var blob []byte
	if bt == longTargetMarker {
		blob, err = backing.ReadFileAt(dirfd, meta.SymlinkSidecarName(n.Backing), linkSidecarSize)
		if err != nil {
			return "", fmt.Errorf("%w: symlink sidecar: %v", meta.ErrCorrupt, err)
		}
	} else if blob, err = meta.DecodeTarget(bt); err != nil {
		return "", fmt.Errorf("%w: %v", meta.ErrCorrupt, err)
	}
	return t.links.Open(dirID, n.boundName(), blob)
}

// LinkSize returns the plaintext target length of symlink n in dirfd from
// its backing stat st alone: the backing target's length, or for a long
// target (the marker, shorter than any inline target) the sidecar's size.
// It never reads the link, because reading a link moves its atime
// (relatime) and a stat must not change what it reports.
func (t *Tree) LinkSize(dirfd int, n Name, st *unix.Stat_t) (int64, error) {
	if st.Size != int64(len(longTargetMarker)) {
		return meta.TargetLen(st.Size)
	}
	side, err := backing.Fstatat(dirfd, meta.SymlinkSidecarName(n.Backing))
	if err != nil {
		return 0, fmt.Errorf("%w: symlink sidecar: %v", meta.ErrCorrupt, err)
	}
	return meta.BlobTargetLen(side.Size)
}

// placeSymlink writes a symlink to target bound to (dirID, n) under a
// temporary name in dirfd and renames it to n.Backing with flags
// (0 replaces, unix.RENAME_NOREPLACE refuses to). The long-target sidecar, if
// needed, is written first. The new link takes the owner and times of was,
// the backing stat of the link it re-creates (see keepLinkAttrs).
func (t *Tree) placeSymlink(dirfd int, dirID []byte, n Name, target string, was *unix.Stat_t, flags uint) error {
	bt, blob, side, err := t.sealTarget(dirID, n, target)
	if err != nil {
		return err
	}
	if side {
		if err := t.writeLinkSidecar(dirfd, n.Backing, blob); err != nil {
			return err
		}
	}
	tmp, err := t.tempName()
	if err != nil {
		return err
	}
	if err := t.fs.Symlinkat(bt, dirfd, tmp); err != nil {
		return err
	}
	if err := keepLinkAttrs(dirfd, tmp, was); err != nil {
		t.fs.Unlinkat(dirfd, tmp, 0)
		return err
	}
	if err := t.fs.Renameat2(dirfd, tmp, dirfd, n.Backing, flags); err != nil {
		t.fs.Unlinkat(dirfd, tmp, 0)
		return err
	}
	if !side {
		// A replaced long-target symlink leaves its sidecar behind.
		return t.dropLinkSidecar(dirfd, n.Backing, dirfd)
	}
	return nil
}

// keepLinkAttrs gives the re-created link name (still under its temporary
// name) the owner and the atime and mtime in was, as rename(2) keeps them:
// before the rename into place, so that no one sees the link with other
// attributes and a crash leaves either the old link or a complete new one.
// Its ctime is the time of the rename, as rename(2) sets it.
//
// The owner is copied when the daemon may chown (it runs as root, or the
// link was its own user's anyway); an unprivileged daemon gets EPERM for
// another owner, and its links all belong to it in the first place, so
// EPERM leaves the daemon's user as the owner (docs/format.md §8), as
// gocryptfs does, which chowns only as root.
func keepLinkAttrs(dirfd int, name string, was *unix.Stat_t) error {
	if err := backing.Fchownat(dirfd, name, int(was.Uid), int(was.Gid)); err != nil && !errors.Is(err, unix.EPERM) {
		return fmt.Errorf("tree: keep symlink owner: %w", err)
	}
	if err := backing.UtimesNanoAt(dirfd, name, [2]unix.Timespec{was.Atim, was.Mtim}); err != nil {
		return fmt.Errorf("tree: keep symlink times: %w", err)
	}
	return nil
}
