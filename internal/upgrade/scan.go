package upgrade

import (
	"errors"
	"fmt"
	"github.com/encryptfs/encryptfs/internal/session"
	"path"
	"slices"
	"strings"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/crypto/bind"
	"github.com/encryptfs/encryptfs/internal/crypto/content"
	"github.com/encryptfs/encryptfs/internal/crypto/names"
	"github.com/encryptfs/encryptfs/internal/tree"
	"golang.org/x/sys/unix"
)

// upgradeTempPrefix starts the temporary names of the content upgrade: in
// the reserved temp namespace (fsck reports a leftover as temp-file), and
// apart from the other temporaries, so that a resumed upgrade removes its
// own leftovers only.
const upgradeTempPrefix = names.TempPrefix + "upgrade."

// upgrader is one run of Content: v1 reads names (whatever form
// each dirid has, names are encrypted under the directory's ID) and v1
// headers; b, a session of the same key with binding, checks and makes
// v2 objects.
type upgrader struct {
	v1, b  *session.Session
	rootfd int
	// unrooted parses v2 headers without roots (a bound vault's, or
	// those an earlier version's interrupted upgrade wrote); b's suite
	// has roots.
	unrooted *content.Suite

	dirs     []*upDir                     // in post-order: a directory after everything below it
	files    []*upFile                    // regular files to convert: a v1 header, or v2 without roots
	v2       map[content.FileID][]*upFile // files done: a v2 header with roots
	temps    []upTemp
	problems []string
	skipped  int

	doneDirs, doneFiles, relinked int
}

// anyConverted reports whether the scan found an object an earlier run
// converted (a v2 directory ID or a v2 file with roots, both bound to
// the VaultID the upgrade binds with).
func (u *upgrader) anyConverted() bool {
	return len(u.v2) > 0 || slices.ContainsFunc(u.dirs, func(d *upDir) bool { return d.v2 })
}

// upDir is a directory found by the scan.
type upDir struct {
	rel   string // backing path from CIPHERDIR ("." for the root)
	plain string // plaintext path, for messages
	id    []byte
	place bind.Place
	v2    bool     // its dirid is v2 already
	alts  []string // v1 conflict copies of its dirid
	post  int      // index in post-order
	ops   []upOp   // file conversions assigned to it (convert.go)
	// names are its entries that decrypt, by backing name, while the
	// scan is in it.
	names map[string]tree.Name
}

// upFile is a regular file with a header found by the scan.
type upFile struct {
	dir   *upDir
	name  string // backing name
	plain string
	place bind.Place
	st    unix.Stat_t
	hdr   content.Header // the v1 header, or the v2 one
	v2    bool           // done: a v2 header with roots
	// fromV2: to convert, a v2 header without roots, bound where it is;
	// its conversion keeps its bindings (and its links file).
	fromV2 bool
	slots  []bind.Binding // a v2 file's bindings: its header's, or its links file's
}

// upTemp is a leftover temporary of an interrupted upgrade.
type upTemp struct {
	dir  *upDir
	name string
}

// scan walks the vault (tree.Walk), read-only, and finds what is left
// to convert and anything that would stop the conversion (problems).
func (u *upgrader) scan() error {
	u.v2 = map[content.FileID][]*upFile{}
	root := &upDir{rel: ".", plain: "/", place: u.b.Tree().RootPlace()}
	err := tree.Walk(u.rootfd, root, tree.Walker{
		Enter:      u.enterDir,
		Entry:      u.scanEntry,
		OpenFailed: openFailed,
		Leave:      u.leaveDir,
	})
	if err != nil {
		return err
	}
	u.plan()
	return nil
}

// openFailed stops the scan at a directory it cannot open.
func openFailed(_ *tree.WalkDir, _ string, data any, err error) error {
	return fmt.Errorf("session: upgrade: %s: %w", data.(*upDir).plain, err)
}

func (u *upgrader) problem(format string, args ...any) {
	u.problems = append(u.problems, fmt.Sprintf(format, args...))
}

// blocked is the error listing the problems (the first five), on one line.
func (u *upgrader) blocked() error {
	list := u.problems
	more := ""
	if len(list) > 5 {
		list, more = list[:5], fmt.Sprintf("; and %d more", len(u.problems)-5)
	}
	return fmt.Errorf("%w (no file or directory was converted): %s%s", ErrBlocked, strings.Join(list, "; "), more)
}

// dirIDOf reads the ID of a directory found at place p from its ID file
// as the walk read it (r): a v1 ID file, or a v2 one (converted by an
// interrupted run), which must be bound to p.
func (u *upgrader) dirIDOf(r tree.DirIDRead, p bind.Place) (id []byte, v2 bool, err error) {
	if r.Err == nil && len(r.Raw) > tree.DirIDFileSizeV2 {
		r.Err = fmt.Errorf("%w: %s", backing.ErrTooBig, names.DirIDFile)
	}
	if r.Err != nil {
		return nil, false, fmt.Errorf("%w: %v", tree.ErrCorruptDir, r.Err)
	}
	f, err := tree.ParseDirIDFile(r.Raw)
	switch {
	case err != nil:
		return nil, false, err
	case !f.V2:
		return f.ID, false, nil
	}
	id, err = u.b.Tree().DirIDs().Of(r, p)
	if err == nil && u.v1.Tree().Bound() {
		// v1 lists the directory's names (enterDir): a bound v1
		// session picks their key by the epoch it noted when it
		// checked this ID file itself (§3b).
		_, err = u.v1.Tree().DirIDs().Of(r, p)
	}
	return id, true, err
}

// enterDir starts the scan of directory d: its ID (a directory whose ID
// does not read is a problem, and is not scanned), the leftover
// temporaries and v1 conflict copies of its ID among its names, and its
// entries that decrypt, listed with v1's rules.
func (u *upgrader) enterDir(wd *tree.WalkDir) (bool, error) {
	d := wd.Data.(*upDir)
	id, v2, err := u.dirIDOf(wd.ID, d.place)
	switch {
	case err != nil && d.rel == ".":
		return false, fmt.Errorf("session: upgrade: the root's directory ID: %w", err)
	case err != nil:
		u.problem("%s: directory ID: %v", d.plain, err)
		return false, nil
	case wd.ListErr != nil:
		return false, fmt.Errorf("session: upgrade: %s: %w", d.plain, wd.ListErr)
	}
	d.id, d.v2 = id, v2
	for _, e := range wd.Ents {
		switch {
		case strings.HasPrefix(e.Name, upgradeTempPrefix):
			u.temps = append(u.temps, upTemp{dir: d, name: e.Name})
		case tree.IsAltDirIDName(e.Name):
			if raw, err := backing.ReadFileAt(wd.Fd, e.Name, tree.DirIDFileSizeV2); err == nil && len(raw) == tree.DirIDFileSizeV1 {
				d.alts = append(d.alts, e.Name)
			}
		}
	}
	list, bad := u.v1.Tree().ListOf(wd, d.id, nil)
	u.skipped += len(bad)
	d.names = make(map[string]tree.Name, len(list))
	for _, e := range list {
		d.names[e.Name.Backing] = e.Name
	}
	return true, nil
}

// leaveDir ends the scan of directory d: it goes into the post-order.
// Why post-order: a directory's conflict copies of its ID are converted
// after all of its entries, so a resumed scan, which lists with v1's
// rules, still finds every entry made under such a copy that is not
// converted yet (once the copy is v2, v1's rules skip them, and they are
// all done).
func (u *upgrader) leaveDir(wd *tree.WalkDir) error {
	d := wd.Data.(*upDir)
	d.names = nil
	d.post = len(u.dirs)
	u.dirs = append(u.dirs, d)
	return nil
}

// scanEntry scans entry name of directory wd (lstat st, or statErr);
// it asks the walk into a subdirectory.
func (u *upgrader) scanEntry(wd *tree.WalkDir, name string, st unix.Stat_t, statErr error) (bool, any, error) {
	d := wd.Data.(*upDir)
	n, ok := d.names[name]
	if !ok || errors.Is(statErr, unix.ENOENT) {
		return false, nil, nil // a name that does not decrypt (skipped), or gone
	}
	if statErr != nil {
		return false, nil, fmt.Errorf("session: upgrade: %s: %w", path.Join(d.plain, n.Plain), statErr)
	}
	place := u.v1.Tree().Place(d.id, n)
	plain := path.Join(d.plain, n.Plain)
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return true, &upDir{rel: path.Join(d.rel, n.Backing), plain: plain, place: place}, nil
	case unix.S_IFREG:
		u.scanFile(wd.Fd, &upFile{dir: d, name: n.Backing, plain: plain, place: place, st: st})
	}
	// Symlinks are bound already (their target's AD is the directory ID
	// and name), and so are xattrs (to their object's ID): nothing to do.
	return false, nil, nil
}

// scanFile reads file f's header: v1 or v2 without roots (to convert,
// once its chunks are checked: verifyChunks), or v2 with roots (done by
// an interrupted run; it must be bound where it is). An empty file has no
// header and reads as empty anywhere: nothing to convert.
func (u *upgrader) scanFile(dirfd int, f *upFile) {
	if f.st.Size == 0 {
		return
	}
	fd, _, err := backing.OpenRegular(dirfd, f.name, unix.O_RDONLY)
	if err != nil {
		u.problem("%s: %v", f.plain, err)
		return
	}
	defer backing.Close(fd)
	buf := make([]byte, content.HeaderSizeV2)
	n, err := backing.NewFile(fd, nil).ReadAt(buf, 0)
	buf = buf[:max(n, 0)]
	version, verr := content.HeaderVersion(buf)
	if verr != nil {
		u.problem("%s: file header: %v", f.plain, err)
		return
	}
	switch version {
	case content.Version:
		if n < content.HeaderSize {
			u.problem("%s: truncated file header (%d bytes)", f.plain, n)
			return
		}
		h, err := u.v1.Engine().Suite().ParseHeader(buf[:content.HeaderSize])
		if err != nil {
			u.problem("%s: %v", f.plain, err)
			return
		}
		f.hdr = h
	case content.VersionV2:
		// Without roots first: a roots header (gen >= 1) never parses so.
		h, err := u.unrooted.ParseHeader(buf)
		rooted := err != nil
		if rooted {
			h, err = u.b.Engine().Suite().ParseHeader(buf)
		}
		if err == nil {
			f.slots, err = u.slots(h)
		}
		if err == nil {
			err = u.b.Binder().Check(bind.KindFile, h.FileID[:], f.place, f.slots)
		}
		if err != nil {
			u.problem("%s: v2 file header: %v", f.plain, err)
			return
		}
		f.hdr = h
		if rooted {
			f.v2 = true
			u.v2[h.FileID] = append(u.v2[h.FileID], f)
			return
		}
		f.fromV2 = true
	default:
		u.problem("%s: file header of unknown version", f.plain)
		return
	}
	if err := u.verifyChunks(fd, f, f.st.Size); err != nil {
		u.problem("%s: %v", f.plain, err)
		return
	}
	u.files = append(u.files, f)
}

// slots are the bindings of a v2 file with header h: its header's slots,
// or, with content.FlagLinks (a file of more than two names, converted by
// an interrupted run), its links file's (bind.ErrBadLinks if that is
// missing or bad).
func (u *upgrader) slots(h content.Header) ([]bind.Binding, error) {
	if h.Flags&content.FlagLinks == 0 {
		return h.Bindings[:], nil
	}
	l, err := u.b.Tree().Links().LoadAt(u.rootfd, h.FileID[:])
	if err != nil {
		return nil, err
	}
	return l.Bindings, nil
}
