// Package reversefs is the reverse-mode FUSE filesystem: a read-only view
// that shows an encrypted version of a plaintext directory (PLAINDIR), for
// encrypted backups. A copy of the view is a normal forward-mode vault with
// the same password (docs/reverse.md).
//
// Everything in the view is computed on the fly and deterministically from
// the plaintext by the session's reverse engine (engine.Reverse, opened for
// one view as engine.ReverseView): names under derived directory IDs, file
// contents as header plus aes-256-siv chunks with derived nonces, symlink
// targets with derived nonces, and the reading of PLAINDIR, where no
// symlink is followed. Nothing is written to PLAINDIR. This package is the
// FUSE side only: nodes and their identities, attributes, errnos, the
// listing handed to the kernel.
package reversefs

import (
	"log"

	"github.com/encryptfs/encryptfs/internal/engine"
	"github.com/encryptfs/encryptfs/internal/session"
	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// ConfigName is the reverse config's name in PLAINDIR
// (engine.ReverseConfigName). The view hides it and shows its bytes in the
// view's root as encryptfs.conf, so that a copy of the view opens as a
// forward vault with the same password.
const ConfigName = engine.ReverseConfigName

// Errors.
var (
	// ErrCipher: reverse mode needs aes-256-siv (derived nonces repeat).
	ErrCipher = session.ErrReverseCipher
	// ErrPattern: an --exclude pattern is malformed.
	ErrPattern = engine.ErrPattern
)

// Options configures the view.
type Options struct {
	// Excludes are path.Match patterns; an entry whose relative plaintext
	// path or base name matches one is not shown (nor anything below it).
	Excludes []string
	// ForceOwner, if set, is shown as the owner of every entry.
	ForceOwner *fuse.Owner
	// OneFileSystem stops the view at file system boundaries (like
	// rsync -x): a directory on another file system than PLAINDIR (a mount
	// point below it, such as the view's own mount point) is shown empty.
	OneFileSystem bool
	// Logger receives diagnostics (one line per failing path); nil
	// discards them.
	Logger *log.Logger
}

// Root is the view's root directory node plus the state shared by all
// nodes: the opened view of PLAINDIR (engine.ReverseView), the owner shown
// and the logger.
type Root struct {
	node
	v      *engine.ReverseView
	owner  *fuse.Owner
	logger *log.Logger
}

// NewRoot opens the PLAINDIR of the reverse session s for a view through
// the session's reverse engine (s.View). Close releases it after the
// filesystem is unmounted.
func NewRoot(s *session.Reverse, o Options) (*Root, error) {
	v, err := s.View().Open(engine.ReverseOptions{Excludes: o.Excludes, OneFileSystem: o.OneFileSystem, Logger: o.Logger})
	if err != nil {
		return nil, err
	}
	r := &Root{v: v, owner: o.ForceOwner, logger: o.Logger}
	r.node = node{r: r, kind: kindDir}
	return r, nil
}

// Close closes the PLAINDIR fd. Call it after the server has exited; the
// session's Close wipes the reverse key.
func (r *Root) Close() error {
	return r.v.Close()
}

// logf logs a diagnostic.
func (r *Root) logf(format string, args ...any) {
	if r.logger != nil {
		r.logger.Printf(format, args...)
	}
}

var _ fs.InodeEmbedder = (*Root)(nil)
