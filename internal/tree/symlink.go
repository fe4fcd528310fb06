package tree

import (
	"errors"
	"fmt"
	"io"

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

// Symlinks is the part of a Tree that owns one rule: a symlink's target
// is encrypted and bound to the link's directory ID and name, so it is
// re-encrypted whenever the link moves, and a target too long for the
// backing symlink lives in a sidecar that exists before the link and
// goes only after the link's removal is durable.
type Symlinks struct {
	c    *meta.Symlinks
	rand io.Reader
	fs   *backing.FS // makes every change (nil: unobserved)
}

// seal encrypts target bound to (dirID, plain name).
func (s *Symlinks) seal(dirID []byte, n Name, target string) (backingTarget string, blob []byte, sidecar bool, err error) {
	blob, err = s.c.Seal(dirID, n.boundName(), target, s.rand)
	if err != nil {
		return "", nil, false, err
	}
	backingTarget, sidecar = meta.EncodeTarget(blob)
	return backingTarget, blob, sidecar, nil
}

// Symlink creates symlink n in directory d pointing to target.
func (t *Tree) Symlink(d Dir, n Name, target string) error {
	dirfd := d.fd
	bt, blob, side, err := t.links.seal(d.id, n, target)
	if err != nil {
		return err
	}
	created, err := t.writeSidecar(dirfd, n)
	if err != nil {
		return err
	}
	undo := func() {
		if created {
			t.removeSidecar(dirfd, n)
		}
	}
	if side {
		if _, err := backing.Fstatat(dirfd, n.Backing); err == nil {
			undo()
			return ErrExists
		}
		if err := t.links.writeSidecar(dirfd, n.Backing, blob); err != nil {
			undo()
			return err
		}
	}
	if err := t.fs.Symlinkat(bt, dirfd, n.Backing); err != nil {
		if side && !errors.Is(err, unix.EEXIST) {
			t.links.removeSidecar(dirfd, n.Backing)
		}
		undo()
		return err
	}
	return nil
}

// writeSidecar stores a long target's blob for backing entry name,
// replacing any previous sidecar atomically (temp file, then rename).
func (s *Symlinks) writeSidecar(dirfd int, name string, blob []byte) error {
	tmp, err := tempName(s.rand)
	if err != nil {
		return err
	}
	// Durable before the symlink that needs it is made: a long-target
	// symlink whose sidecar a crash lost has lost its target (found by
	// internal/crashsim's replay, "untar": symlink with a long target).
	if err := s.fs.ReplaceFile(dirfd, tmp, dirfd, meta.SymlinkSidecarName(name), blob, 0o400, backing.ReplaceSyncDir); err != nil {
		return fmt.Errorf("tree: write symlink sidecar: %w", err)
	}
	return nil
}

// dropSidecar removes the long-target sidecar of backing entry name
// of dirfd, if there is one, after the change that made it unused (an
// unlink or rename of the link in dirfd, a rename onto it) was made
// durable by an fsync of syncfd: if the removal survived a crash that the
// change did not, the old symlink would be back without its target (found
// by internal/crashsim's replay, "renames"). A short-target link pays one
// fstatat; a long one a directory fsync.
func (s *Symlinks) dropSidecar(dirfd int, name string, syncfd int) error {
	if _, err := backing.Fstatat(dirfd, meta.SymlinkSidecarName(name)); err != nil {
		return nil
	}
	if err := s.fs.Fsync(syncfd); err != nil {
		return err
	}
	s.removeSidecar(dirfd, name)
	return nil
}

// removeSidecar removes the long-target sidecar of backing entry name,
// if there is one.
func (s *Symlinks) removeSidecar(dirfd int, name string) {
	s.fs.Unlinkat(dirfd, meta.SymlinkSidecarName(name), 0)
}

// Readlink decrypts the target of symlink n in directory d. A target that
// fails authentication gives meta.ErrCorrupt.
func (s *Symlinks) Readlink(d Dir, n Name) (string, error) {
	dirfd := d.fd
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
	return s.c.Open(d.id, n.boundName(), blob)
}

// Size returns the plaintext target length of symlink n in directory d from
// its backing stat st alone: the backing target's length, or for a long
// target (the marker, shorter than any inline target) the sidecar's size.
// It never reads the link, because reading a link moves its atime
// (relatime) and a stat must not change what it reports.
func (s *Symlinks) Size(d Dir, n Name, st *unix.Stat_t) (int64, error) {
	dirfd := d.fd
	if st.Size != int64(len(longTargetMarker)) {
		return meta.TargetLen(st.Size)
	}
	side, err := backing.Fstatat(dirfd, meta.SymlinkSidecarName(n.Backing))
	if err != nil {
		return 0, fmt.Errorf("%w: symlink sidecar: %v", meta.ErrCorrupt, err)
	}
	return meta.BlobTargetLen(side.Size)
}

// place writes a symlink to target bound to (d's ID, n) under a
// temporary name in d and renames it to n.Backing with flags
// (0 replaces, unix.RENAME_NOREPLACE refuses to). The long-target sidecar, if
// needed, is written first. The new link takes the owner and times of was,
// the backing stat of the link it re-creates (see keepLinkAttrs).
func (s *Symlinks) place(d Dir, n Name, target string, was *unix.Stat_t, flags uint) error {
	dirfd := d.fd
	bt, blob, side, err := s.seal(d.id, n, target)
	if err != nil {
		return err
	}
	if side {
		if err := s.writeSidecar(dirfd, n.Backing, blob); err != nil {
			return err
		}
	}
	tmp, err := tempName(s.rand)
	if err != nil {
		return err
	}
	if err := s.fs.Symlinkat(bt, dirfd, tmp); err != nil {
		return err
	}
	if err := keepLinkAttrs(dirfd, tmp, was); err != nil {
		s.fs.Unlinkat(dirfd, tmp, 0)
		return err
	}
	if err := s.fs.Renameat2(dirfd, tmp, dirfd, n.Backing, flags); err != nil {
		s.fs.Unlinkat(dirfd, tmp, 0)
		return err
	}
	if !side {
		// A replaced long-target symlink leaves its sidecar behind.
		return s.dropSidecar(dirfd, n.Backing, dirfd)
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
