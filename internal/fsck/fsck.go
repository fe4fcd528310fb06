// Package fsck checks an EncryptFS vault offline, without mounting it, and
// can copy everything readable out of a damaged vault (salvage).
//
// It goes through the same code as the mount, reached through the
// session's engine (engine.Inspector: the tree for directory IDs, names,
// long-name sidecars, symlink targets and xattrs, the content engine for
// file contents). So a vault that fsck calls clean reads back through the
// mount without an authentication error, and every range fsck reports as
// bad is exactly a range the mount would answer with EIO. fsck owns the
// policy: what is a finding, the report, the repair plan.
//
// Check never modifies the vault: backing files and directories are opened
// read-only (O_NOATIME where permitted), through directory file descriptors
// (the engine's, over internal/backing), and nothing is written under
// CIPHERDIR. Repair (repair.go) is the one function that writes, through
// the inspector's repairs (the session's backing FS): it removes what an
// interrupted operation left behind and rebuilds what can be rebuilt
// without guessing.
package fsck

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/encryptfs/encryptfs/internal/engine"
	"github.com/encryptfs/encryptfs/internal/session"
)

// Kind classifies a problem. The strings are part of the --json output.
type Kind string

// Problem kinds.
const (
	// KindDirID: a directory's encryptfs.dirid is missing or not 16 bytes;
	// none of its entries' names can be decrypted.
	KindDirID Kind = "dirid"
	// KindBadName: an encrypted name fails authentication (tampered, or
	// moved from another directory).
	KindBadName Kind = "bad-name"
	// KindForeign: a name that EncryptFS never writes (a file put into the
	// CIPHERDIR by something else).
	KindForeign Kind = "foreign-name"
	// KindConflict: "<encrypted name><suffix>" whose encrypted part
	// authenticates: a sync tool's conflict copy. Its content is checked.
	KindConflict Kind = "conflict-copy"
	// KindLongName: a long-name entry whose ".name" sidecar is missing or
	// does not hash to the entry's name.
	KindLongName Kind = "long-name"
	// KindOrphanSidecar: a long-name or long-symlink sidecar without the
	// entry it belongs to.
	KindOrphanSidecar Kind = "orphan-sidecar"
	// KindTemp: a temporary file left behind by an interrupted operation.
	KindTemp Kind = "temp-file"
	// KindReserved: an unknown name in EncryptFS's reserved namespace.
	KindReserved Kind = "unknown-reserved"
	// KindHeader: a regular file's header fails authentication; its
	// contents cannot be decrypted at all.
	KindHeader Kind = "bad-header"
	// KindSize: the backing file's size is impossible (cut inside a chunk's
	// nonce or tag, or shorter than a header).
	KindSize Kind = "bad-size"
	// KindTruncated: the file ends at a chunk boundary but its last chunk is
	// not marked final: later data was cut off. Every byte present is good.
	KindTruncated Kind = "truncated"
	// KindChunk: chunks that fail authentication; Ranges lists the
	// plaintext byte range of each.
	KindChunk Kind = "bad-chunk"
	// KindSymlink: a symlink target fails authentication or its sidecar is
	// missing.
	KindSymlink Kind = "bad-symlink"
	// KindXattrName: an encrypted xattr name fails authentication.
	KindXattrName Kind = "bad-xattr-name"
	// KindXattrValue: an xattr value fails authentication.
	KindXattrValue Kind = "bad-xattr-value"
	// KindIO: a backing entry could not be read (permissions, I/O error).
	KindIO Kind = "io-error"
)

// Range is a plaintext byte range [Start, End).
type Range struct {
	Start int64
	End   int64
}

// Problem is one thing wrong with the vault.
type Problem struct {
	Kind Kind
	// CipherPath is the backing path, relative to CIPHERDIR ("." is the root).
	CipherPath string
	// PlainPath is the plaintext path ("/"-rooted), or "" when a name on the
	// way cannot be decrypted.
	PlainPath string `json:",omitempty"`
	// Ranges are plaintext byte ranges, one per bad chunk (KindChunk).
	Ranges []Range `json:",omitempty"`
	// Detail says what exactly failed, for a human.
	Detail string
	// SalvagedAs is where the entry was written in the salvage directory
	// (relative to it), if it was.
	SalvagedAs string `json:",omitempty"`
}

// Summary counts what was checked.
type Summary struct {
	Dirs       int64
	Files      int64 // regular files (each inode once)
	Symlinks   int64
	Others     int64 // fifos, sockets, devices
	Xattrs     int64
	PlainBytes int64 // plaintext bytes read and authenticated (or found bad)
	BadChunks  int64
	BadBytes   int64 // plaintext bytes in bad chunks
	Problems   int
	ByKind     map[Kind]int `json:",omitempty"`
	// SalvageZeroBytes counts the zero bytes written in place of bad chunks.
	SalvageZeroBytes int64 `json:",omitempty"`
}

// Report is the result of Check.
type Report struct {
	CipherDir string
	Salvage   string `json:",omitempty"`
	Clean     bool
	// Interrupted is true when the context was cancelled before the walk
	// ended: the report covers only part of the vault.
	Interrupted bool `json:",omitempty"`
	Problems    []Problem
	// Hints are guesses at a common cause of many problems, for a human.
	Hints []string `json:",omitempty"`
	// Conflicts are a sync tool's conflict copies that the mount shows
	// (read-only, under "<name><suffix>"): the user has a choice to make,
	// but nothing is damaged, so they do not make the vault unclean.
	// Their contents are checked like any file's.
	Conflicts []Problem `json:",omitempty"`
	// Notes say what could not be checked for a reason that is not damage,
	// once per run: a backing store without extended attributes.
	Notes []string `json:",omitempty"`
	// Behind is true when freshness found something recorded that is not
	// (yet) there in a way a sync in flight could explain: a note, not a
	// problem (the vault stays Clean), which the CLI reports with its own
	// exit code (27, as freshness status does).
	Behind bool `json:",omitempty"`
	// SalvageErrors lists failures to write into the salvage directory
	// (not problems of the vault).
	SalvageErrors []string `json:",omitempty"`
	Summary       Summary
}

// Progress is passed to Options.Progress while the check runs. Totals come
// from a quick metadata scan before the check.
type Progress struct {
	Files, TotalFiles int64
	Bytes, TotalBytes int64 // plaintext bytes
	Elapsed           time.Duration
}

// Options configure Check.
type Options struct {
	// Salvage, if not "", is a directory (missing or empty, outside
	// CIPHERDIR) to copy everything readable into, as plaintext.
	Salvage string
	// Progress, if not nil, is called from Check's goroutine after each file
	// and every few MiB of a large one.
	Progress func(Progress)
}

// ErrSalvageDir: the salvage directory is not usable (not empty, inside
// CIPHERDIR).
var ErrSalvageDir = errors.New("fsck: unusable salvage directory")

// SalvageReportName is the report file written at the top of a salvage
// directory.
const SalvageReportName = ".encryptfs-salvage-report.txt"

// Check walks the whole vault of session s (its directory, with its name
// tree and engine) and reports every problem. Problems of the vault are in the Report; the error is for
// failures that stop the walk (CIPHERDIR unreadable, salvage directory
// unusable, ctx cancelled; then the partial Report is returned too).
func Check(ctx context.Context, s *session.Session, opts Options) (*Report, error) {
	w, err := check(ctx, s, opts, false)
	if w == nil {
		return nil, err
	}
	return w.rep, err
}

// check is Check; with plan, it also plans the fixes Repair makes
// (walker.fixes). The walker is nil when the walk could not start.
func check(ctx context.Context, s *session.Session, opts Options, plan bool) (*walker, error) {
	cipherDir := s.Dir()
	ins := s.Vault().Inspect()
	root, err := ins.OpenRoot()
	if err != nil {
		return nil, err
	}
	defer root.Close()
	w := &walker{
		ctx: ctx, ins: ins,
		rep:      &Report{CipherDir: cipherDir, Salvage: opts.Salvage},
		progress: opts.Progress,
		seen:     make(map[inodeKey]string),
		start:    time.Now(),
		plan:     plan,
	}
	if err := root.ProbeXattrs(); engine.IsNoXattrs(err) {
		// One note, not a problem per file: a store without xattrs (an
		// rclone mount) is no damage, and a vault on it has none to check.
		w.noXattrs = true
		w.rep.Notes = append(w.rep.Notes, fmt.Sprintf("%v: extended attributes were not checked", err))
	}
	if opts.Salvage != "" {
		salv, err := newSalvager(cipherDir, opts.Salvage)
		if err != nil {
			return nil, err
		}
		defer salv.close()
		w.salv = salv
	}
	if w.progress != nil {
		w.prog.TotalFiles, w.prog.TotalBytes = w.prescan(root)
		w.report(true)
	}
	var dest *destDir
	if w.salv != nil {
		dest = w.salv.root
	}
	w.walk(root, w.ins.RootPlace(), dest)
	if ctx.Err() == nil {
		w.staleLinks()
		w.checkLinksFiles(root)
		w.checkFreshness(s)
	}
	w.reportDupDirIDs()
	w.report(true)
	if err := ctx.Err(); err != nil {
		w.rep.Interrupted = true
	}
	w.finish()
	if w.salv != nil {
		if err := w.salv.writeReport(w.rep); err != nil {
			w.rep.SalvageErrors = append(w.rep.SalvageErrors, err.Error())
		}
	}
	if w.rep.Interrupted {
		return w, fmt.Errorf("fsck: interrupted: %w", ctx.Err())
	}
	return w, nil
}

// finish fills the summary counts.
func (w *walker) finish() {
	r := w.rep
	r.Summary.Problems = len(r.Problems)
	r.Summary.ByKind = make(map[Kind]int)
	for _, p := range r.Problems {
		r.Summary.ByKind[p.Kind]++
	}
	r.Clean = len(r.Problems) == 0 && !r.Interrupted
	if w.filesWithBad >= 2 && 2*w.filesWithBad >= w.filesWithData {
		r.Hints = append(r.Hints, "at least half of the files have chunks that fail although their headers authenticate: "+
			"the Cipher or ChunkSize in encryptfs.conf may have been edited, or the files come from another vault")
	}
}

// joinCipher joins backing path components for reports.
func joinCipher(dir, name string) string {
	if dir == "." {
		return name
	}
	return dir + "/" + name
}

// joinPlain joins plaintext path components; "" (unknown) stays unknown.
func joinPlain(dir, name string, known bool) string {
	if !known || dir == "" {
		return ""
	}
	return strings.TrimSuffix(dir, "/") + "/" + name
}

// insideDir reports whether path p is dir or below it (both cleaned and
// made absolute; symlinks resolved where they exist).
func insideDir(p, dir string) bool {
	rp, rd := resolvePath(p), resolvePath(dir)
	return rp == rd || strings.HasPrefix(rp, rd+string(filepath.Separator))
}

// resolvePath makes p absolute and resolves symlinks in its longest
// existing prefix.
func resolvePath(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		return filepath.Clean(p)
	}
	rest := ""
	for cur := abs; ; {
		if r, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return abs
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}
