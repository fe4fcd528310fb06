package tree

import (
	"errors"
	"fmt"
	"io"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/crypto/bind"
	"github.com/encryptfs/encryptfs/internal/crypto/content"
	"github.com/encryptfs/encryptfs/internal/crypto/names"
	"golang.org/x/sys/unix"
)

// LinkStore is the fileengine.LinkStore of a bound vault: the links files of
// files with more names than their header can bind (fileengine/links.go,
// docs/format.md §14), encryptfs.links.<b64url(fileID)> in the vault's
// root. It opens the root by path for each call instead of keeping a
// descriptor (links files are written only by link, unlink and rename of
// such files, and read when one is opened), and makes every change
// through fs, so that the crash replay sees it.
//
// Why the root, wherever the names are: a file's names may be in many
// directories, and any of them may be renamed or removed; one fixed place
// per file ID needs no search and survives every rename. The cost is a
// write and an fsync of the root per link, unlink or rename of such a
// file, even deep down.
type LinkStore struct {
	fs     *backing.FS
	root   string
	binder *bind.Binder
	rand   io.Reader
}

// NewLinkStore returns the LinkStore of the vault whose CIPHERDIR is root.
// rand names temporary files; fsys makes the changes (nil: unobserved).
func NewLinkStore(fsys *backing.FS, root string, b *bind.Binder, rand io.Reader) *LinkStore {
	return &LinkStore{fs: fsys, root: root, binder: b, rand: rand}
}

// Load reads and checks fileID's links file. Missing, not a regular file,
// too large, malformed, a failed MAC or another file's: bind.ErrBadLinks.
func (s *LinkStore) Load(fileID content.FileID) (bind.LinkList, error) {
	rootfd, err := backing.OpenRoot(s.root)
	if err != nil {
		return bind.LinkList{}, err
	}
	defer backing.Close(rootfd)
	return s.LoadAt(rootfd, fileID[:])
}

// LoadAt is Load in the open root rootfd (fsck).
func (s *LinkStore) LoadAt(rootfd int, fileID []byte) (bind.LinkList, error) {
	name := bind.LinksName(fileID)
	raw, err := backing.ReadFileAt(rootfd, name, bind.MaxLinksFileSize)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ELOOP) || errors.Is(err, backing.ErrTooBig) || errors.Is(err, backing.ErrNotRegular) {
		return bind.LinkList{}, fmt.Errorf("tree: %s: %w: %v", name, bind.ErrBadLinks, err)
	}
	if err != nil {
		return bind.LinkList{}, fmt.Errorf("tree: read %s: %w", name, err)
	}
	l, err := s.binder.OpenLinks(raw, fileID)
	if err != nil {
		return bind.LinkList{}, fmt.Errorf("tree: %s: %w", name, err)
	}
	return l, nil
}

// Store replaces l's links file atomically: a temporary file in the root
// (backing.FS.ReplaceFile: written and fsynced), renamed over it, and
// with sync the root fsynced. A crash leaves the old or the new list
// (and at worst the temporary file: fsck's temp-file).
func (s *LinkStore) Store(l bind.LinkList, sync bool) error {
	rootfd, err := backing.OpenRoot(s.root)
	if err != nil {
		return err
	}
	defer backing.Close(rootfd)
	var b [12]byte
	if _, err := io.ReadFull(s.rand, b[:]); err != nil {
		return fmt.Errorf("tree: random name: %w", err)
	}
	var o backing.ReplaceOpts
	if sync {
		o = backing.ReplaceSyncDir
	}
	if err := s.fs.ReplaceFile(rootfd, names.TempName(b[:]), rootfd, bind.LinksName(l.FileID[:]), s.binder.SealLinks(l), 0o400, o); err != nil {
		return fmt.Errorf("tree: replace links file: %w", err)
	}
	return nil
}

// Remove removes fileID's links file; a missing one is no error.
func (s *LinkStore) Remove(fileID content.FileID) error {
	rootfd, err := backing.OpenRoot(s.root)
	if err != nil {
		return err
	}
	defer backing.Close(rootfd)
	err = s.fs.Unlinkat(rootfd, bind.LinksName(fileID[:]), 0)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	return err
}
