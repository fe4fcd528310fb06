package vault

import (
	"errors"
	"io/fs"
	"time"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/core"
	"golang.org/x/sys/unix"
)

// fileInfo describes one plaintext entry. Sys returns the backing
// *unix.Stat_t (its Size is the ciphertext size).
type fileInfo struct {
	name string
	size int64
	st   unix.Stat_t
}

func (fi *fileInfo) Name() string       { return fi.name }
func (fi *fileInfo) Size() int64        { return fi.size }
func (fi *fileInfo) Mode() fs.FileMode  { return backing.FileMode(fi.st.Mode) }
func (fi *fileInfo) ModTime() time.Time { return time.Unix(fi.st.Mtim.Unix()) }
func (fi *fileInfo) IsDir() bool        { return fi.Mode().IsDir() }
func (fi *fileInfo) Sys() any           { st := fi.st; return &st }

// dirEntry is an fs.DirEntry with its info computed while listing.
type dirEntry struct{ info *fileInfo }

func (d dirEntry) Name() string               { return d.info.name }
func (d dirEntry) IsDir() bool                { return d.info.IsDir() }
func (d dirEntry) Type() fs.FileMode          { return d.info.Mode().Type() }
func (d dirEntry) Info() (fs.FileInfo, error) { return d.info, nil }

// statEntry builds the info of entry ref: the plaintext size of a regular
// file (from its open engine file if there is one) or symlink target.
func (v *Vault) statEntry(ref entryRef) (*fileInfo, error) {
	st, err := backing.Fstatat(ref.parent.fd, ref.name.Backing)
	if err != nil {
		return nil, err
	}
	fi := &fileInfo{name: ref.name.Plain, st: st, size: st.Size}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		if fi.size, err = v.plainSize(st); err != nil {
			return nil, err
		}
	case unix.S_IFLNK:
		target, err := v.tree.Readlink(ref.parent.fd, ref.parent.id, ref.name)
		if err != nil {
			return nil, err
		}
		fi.size = int64(len(target))
	}
	return fi, nil
}

// plainSize is a regular file's plaintext size: from the open engine file
// if there is one (it is authoritative while open), else from the backing
// size.
func (v *Vault) plainSize(st unix.Stat_t) (int64, error) {
	key := core.FileKey{Dev: st.Dev, Ino: st.Ino}
	if oi, ok := v.files.Lookup(key); ok {
		size, err := oi.cf.Size()
		v.files.Release(key, oi)
		if !errors.Is(err, core.ErrClosed) {
			return size, err
		}
	}
	return v.sess.Engine().Suite().PlainSize(st.Size)
}
