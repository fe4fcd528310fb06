package vault

import (
	"io/fs"
	"time"

	"github.com/encryptfs/encryptfs/internal/engine"
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
func (fi *fileInfo) Mode() fs.FileMode  { return engine.FileMode(fi.st.Mode) }
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
// file (from its open engine file if there is one) or symlink target
// (engine.Dir.Attr).
func statEntry(ref entryRef) (*fileInfo, error) {
	a, err := ref.parent.Attr(ref.name)
	if err != nil {
		return nil, err
	}
	return &fileInfo{name: ref.name.Plain, st: a.Stat_t, size: a.Size}, nil
}
