package crashsim_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/crashsim"
	"github.com/encryptfs/encryptfs/internal/fsck"
	"github.com/encryptfs/encryptfs/internal/session"
	"github.com/encryptfs/encryptfs/vault"
	"golang.org/x/sys/unix"
)

// The harness runs a workload on a vault through the vault package (and,
// for what the package has no call for, the session's engine and the
// observed backing FS, as the FUSE frontend would), records every change
// it makes to CIPHERDIR, and notes what the workload may rely on after a
// crash, in plaintext terms:
//   - a file claim: after File.Sync, the file's content and xattrs;
//   - an entry claim: after an fsync of a directory (the vault's Create
//     and Mkdir fsync the parent; syncDir stands for fsyncdir through the
//     mount), every entry it holds;
//   - a rename claim: a renamed entry exists under its old or new name;
//   - the password that opens the vault.
//
// A claim holds at crash point k if it was made before k and no operation
// touching its path started between the claim and k (a write touches the
// content; a remove or rename touches the name too).

// cheap: the KDF floor and the smallest chunk, for speed.
var cheap = vault.Options{KDFTime: 1, KDFMemoryKiB: 8192, KDFThreads: 1, ChunkSize: 4096}

type fileClaim struct {
	path   string
	data   []byte
	xattrs map[string][]byte
	at     int
}

type entryClaim struct {
	path string
	at   int
}

type touch struct {
	path   string
	at     int
	remove bool // the name may go away, not only the content change
	// For a change of a file's content: the plaintext bytes [lo, hi) it
	// may change (hi -1: all of them, or not a content change we track),
	// and whether it changes the size.
	lo, hi int64
	resize bool
}

type renameClaim struct {
	from, to   string
	start, end int
}

type passwdEvent struct {
	start, end int
	pw         []byte
}

type harness struct {
	t       *testing.T
	dir     string
	pw      []byte
	rec     *crashsim.Recorder
	fs      *backing.FS
	v       *vault.Vault
	files   []fileClaim
	entries []entryClaim
	touches []touch
	renames []renameClaim
	passwds []passwdEvent
	labels  map[int]string // op index -> workload step starting there
	// unlocked remembers master keys by config file and password.
	unlocked map[string][]byte
	// vaultID turns location binding on in every session (bound_test.go);
	// nil: v1.
	vaultID []byte
	// roots turns file roots on too (roots_test.go).
	roots bool
	sess  *session.Session // the recorded session (h.v's)
	// linked: hard links of one file with its contents (bound_test.go):
	// each that exists in a crash state must read them.
	linked map[string][]byte
}

// newHarness makes a vault, lets setup fill it unrecorded, and opens it
// again with a recorder.
func newHarness(t *testing.T, setup func(v *vault.Vault)) *harness {
	return newHarnessAt(t, nil, setup)
}

// newHarnessAt is newHarness, with location binding if vaultID is set.
func newHarnessAt(t *testing.T, vaultID []byte, setup func(v *vault.Vault)) *harness {
	t.Helper()
	return newHarnessWith(t, vaultID, false, setup)
}

// newHarnessWith is newHarnessAt, with file roots if roots.
func newHarnessWith(t *testing.T, vaultID []byte, roots bool, setup func(v *vault.Vault)) *harness {
	t.Helper()
	dir := t.TempDir()
	pw := []byte("old password")
	opts := cheap
	opts.Rand = rand.NewChaCha8([32]byte{1})
	v, err := vault.Create(dir, pw, opts)
	if err != nil {
		t.Fatal(err)
	}
	if vaultID != nil {
		v = bindVault(t, v, dir, pw, vaultID, roots)
	}
	if setup != nil {
		setup(v)
	}
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}
	rec, err := crashsim.NewRecorder(dir)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, dir: dir, pw: pw, rec: rec, fs: backing.NewFS(rec), labels: map[int]string{}, unlocked: map[string][]byte{}, vaultID: vaultID, roots: roots}
	s, err := session.Open(dir, pw, session.Options{Backing: h.fs, BoundVaultID: vaultID, FileRoots: roots, CompactRoots: roots, TrimmedLeaves: roots})
	if err != nil {
		t.Fatal(err)
	}
	h.sess = s
	if h.v, err = vault.FromSession(s); err != nil {
		t.Fatal(err)
	}
	// The harness also changes CIPHERDIR behind the vault's back (an
	// exchange through the session's tree, bound_test.go), as a mount
	// beside a server does: the vault keeps no directory
	// (vault/dircache.go), so that its next call sees the change.
	h.v.SharedStorage()
	t.Cleanup(func() { h.v.Close() })
	// Everything that exists now is durable.
	h.claimTree("")
	return h
}

// claimTree claims every entry and file content below dir (setup made
// them and closed the vault; the test treats them as synced).
func (h *harness) claimTree(dir string) {
	ents, err := h.v.ReadDir(dir)
	if err != nil {
		h.t.Fatal(err)
	}
	for _, e := range ents {
		p := path.Join(dir, e.Name())
		h.entries = append(h.entries, entryClaim{path: p, at: 0})
		switch {
		case e.IsDir():
			h.claimTree(p)
		case e.Type().IsRegular():
			h.claimFile(p, 0)
		}
	}
}

func (h *harness) label(s string) { h.labels[h.rec.Len()] = s }

func (h *harness) touch(p string, remove bool) {
	h.touches = append(h.touches, touch{path: p, at: h.rec.Len(), remove: remove, hi: -1})
}

// touchRange notes a change of bytes [lo, hi) of file p, resizing it or not.
func (h *harness) touchRange(p string, lo, hi int64, resize bool) {
	h.touches = append(h.touches, touch{path: p, at: h.rec.Len(), lo: lo, hi: hi, resize: resize})
}

// size is p's current plaintext size.
func (h *harness) size(p string) int64 {
	fi, err := h.v.Stat(p)
	h.must(err)
	return fi.Size()
}

// claimFile claims p's current content and xattrs as of op index at.
func (h *harness) claimFile(p string, at int) {
	data, err := h.v.ReadFile(p)
	if err != nil {
		h.t.Fatal(err)
	}
	h.files = append(h.files, fileClaim{path: p, data: data, xattrs: h.xattrs(h.v, p), at: at})
}

func (h *harness) xattrs(v *vault.Vault, p string) map[string][]byte {
	names, err := v.ListXattr(p)
	if err != nil {
		h.t.Fatalf("listxattr %s: %v", p, err)
	}
	out := map[string][]byte{}
	for _, n := range names {
		val, err := v.GetXattr(p, n)
		if err != nil {
			h.t.Fatalf("getxattr %s %s: %v", p, n, err)
		}
		out[n] = val
	}
	return out
}

// dirSynced claims every entry of dir now.
func (h *harness) dirSynced(dir string) {
	ents, err := h.v.ReadDir(dir)
	if err != nil {
		h.t.Fatal(err)
	}
	at := h.rec.Len()
	for _, e := range ents {
		h.entries = append(h.entries, entryClaim{path: path.Join(dir, e.Name()), at: at})
	}
}

func parent(p string) string {
	d := path.Dir(p)
	if d == "." {
		return ""
	}
	return d
}

func (h *harness) must(err error) {
	h.t.Helper()
	if err != nil {
		h.t.Fatal(err)
	}
}

// --- workload steps ---

func (h *harness) mkdir(p string) {
	h.label("mkdir " + p)
	h.must(h.v.Mkdir(p, 0o755))
	h.dirSynced(parent(p))
}

// writeFile creates p with data; sync: and fsyncs it.
func (h *harness) writeFile(p string, data []byte, sync bool) {
	h.label("create " + p)
	h.touch(p, false)
	f, err := h.v.Create(p)
	h.must(err)
	h.dirSynced(parent(p))
	_, err = f.Write(data)
	h.must(err)
	if sync {
		h.must(f.Sync())
		h.claimFile(p, h.rec.Len())
	}
	h.must(f.Close())
}

// appendSync appends data to p and fsyncs it.
func (h *harness) appendSync(p string, data []byte) {
	h.label("append " + p)
	old := h.size(p)
	h.touchRange(p, old, old+int64(len(data)), true)
	f, err := h.v.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	h.must(err)
	_, err = f.Write(data)
	h.must(err)
	h.must(f.Sync())
	h.must(f.Close())
	h.claimFile(p, h.rec.Len())
}

func (h *harness) truncate(p string, size int64, sync bool) {
	h.label(fmt.Sprintf("truncate %s %d", p, size))
	old := h.size(p)
	h.touchRange(p, min(old, size), max(old, size), true)
	f, err := h.v.OpenFile(p, os.O_RDWR, 0)
	h.must(err)
	h.must(f.Truncate(size))
	if sync {
		h.must(f.Sync())
		h.claimFile(p, h.rec.Len())
	}
	h.must(f.Close())
}

// punch punches a hole through the engine, as fallocate(PUNCH_HOLE) through
// the mount does (the vault package has no call for it).
func (h *harness) punch(p string, off, length int64, sync bool) {
	h.label(fmt.Sprintf("punch %s %d+%d", p, off, length))
	h.touchRange(p, off, off+length, false)
	bp, err := h.v.EncryptPath(p)
	h.must(err)
	rootfd, err := backing.OpenRoot(h.dir)
	h.must(err)
	defer backing.Close(rootfd)
	dirfd, err := backing.OpenDir(rootfd, path.Dir(bp))
	h.must(err)
	defer backing.Close(dirfd)
	fd, st, err := backing.OpenRegular(dirfd, path.Base(bp), unix.O_RDWR)
	h.must(err)
	bf := h.fs.NewFile(fd, &st)
	defer bf.Close()
	s, err := session.Open(h.dir, h.currentPassword(), session.Options{Backing: h.fs})
	h.must(err)
	defer s.Close()
	cf, err := s.Engine().Open(bf)
	h.must(err)
	h.must(cf.PunchHole(off, length))
	if sync {
		h.must(cf.Sync())
	}
	h.must(cf.Close())
	if sync {
		h.claimFile(p, h.rec.Len())
	}
}

func (h *harness) currentPassword() []byte {
	if n := len(h.passwds); n > 0 {
		return h.passwds[n-1].pw
	}
	return h.pw
}

func (h *harness) setxattr(p, name string, val []byte, sync bool) {
	h.label("setxattr " + p + " " + name)
	h.touchRange(p, 0, 0, false)
	h.must(h.v.SetXattr(p, name, val))
	if sync {
		h.syncFile(p)
	}
}

func (h *harness) removexattr(p, name string, sync bool) {
	h.label("removexattr " + p + " " + name)
	h.touchRange(p, 0, 0, false)
	h.must(h.v.RemoveXattr(p, name))
	if sync {
		h.syncFile(p)
	}
}

func (h *harness) syncFile(p string) {
	f, err := h.v.Open(p)
	h.must(err)
	h.must(f.Sync())
	h.must(f.Close())
	h.claimFile(p, h.rec.Len())
}

// syncDir fsyncs the backing directory of plaintext dir, as fsyncdir
// through the mount does.
func (h *harness) syncDir(dir string) {
	h.label("fsyncdir " + dir)
	bp, err := h.v.EncryptPath(dir)
	h.must(err)
	rootfd, err := backing.OpenRoot(h.dir)
	h.must(err)
	defer backing.Close(rootfd)
	fd, err := backing.OpenDir(rootfd, bp)
	h.must(err)
	defer backing.Close(fd)
	h.must(h.fs.Fsync(fd))
	h.dirSynced(dir)
}

func (h *harness) symlink(target, p string) {
	h.label("symlink " + p)
	h.touch(p, false)
	h.must(h.v.Symlink(target, p))
}

func (h *harness) rename(from, to string) {
	h.label("rename " + from + " " + to)
	start := h.rec.Len()
	h.touch(from, true)
	h.touch(to, false)
	h.must(h.v.Rename(from, to))
	h.renames = append(h.renames, renameClaim{from: from, to: to, start: start, end: h.rec.Len()})
}

func (h *harness) remove(p string) {
	h.label("remove " + p)
	h.touch(p, true)
	h.must(h.v.Remove(p))
}

// passwd changes the password as encryptfs passwd does: rewrap the master
// key and save the config atomically.
func (h *harness) passwd(newPW []byte) {
	h.label("passwd")
	start := h.rec.Len()
	c, err := config.LoadFile(h.dir, config.FileName)
	h.must(err)
	master, err := c.Unlock(h.currentPassword())
	h.must(err)
	k, err := session.NewKDFParams(rand.NewChaCha8([32]byte{3}), 1, 8192, 1)
	h.must(err)
	h.must(c.Rewrap(master, newPW, k, rand.NewChaCha8([32]byte{5})))
	h.must(c.SaveFS(h.fs, h.dir))
	h.passwds = append(h.passwds, passwdEvent{start: start, end: h.rec.Len(), pw: newPW})
}

// --- checking a crash state ---

// under reports whether p is q or below it.
func under(p, q string) bool { return p == q || strings.HasPrefix(p, q+"/") }

// touchedBetween reports whether an operation that started in [from, to)
// touched p: its content (any touch of p or of a directory above it), or
// with name its name (a remove or rename of p or of a directory above it,
// or anything that replaced a directory above it).
func (h *harness) touchedBetween(p string, from, to int, name bool) bool {
	for _, tc := range h.touches {
		if tc.at < from || tc.at >= to || !under(p, tc.path) {
			continue
		}
		if !name || tc.remove || p != tc.path {
			return true
		}
	}
	return false
}

// passwords returns the passwords that may open the vault at crash point k.
func (h *harness) passwords(k int) [][]byte {
	allowed := [][]byte{h.pw}
	for _, e := range h.passwds {
		switch {
		case e.end <= k:
			allowed = [][]byte{e.pw}
		case e.start < k:
			allowed = append(allowed, e.pw)
		}
	}
	return allowed
}

// validFiles returns the file claims that hold at k (the latest per path).
func (h *harness) validFiles(k int) map[string]fileClaim {
	out := map[string]fileClaim{}
	for _, c := range h.files {
		if c.at > k {
			continue
		}
		if old, ok := out[c.path]; ok && old.at > c.at {
			continue
		}
		out[c.path] = c
	}
	for p, c := range out {
		if h.touchedBetween(p, c.at, k, false) {
			delete(out, p)
		}
	}
	return out
}

// crashResult is what one crash state showed.
type crashResult struct {
	problems []fsck.Problem // before repair
	fixes    []fsck.Fix     // what fsck --repair changed
}

// checkState materializes the crash state after ops [0,k) with the pending
// ops keep selects, and checks it. It returns an error describing the
// first broken promise.
func (h *harness) checkState(k int, keep func(int) bool, scratch string) (*crashResult, error) {
	st, err := h.rec.StateAt(k, keep)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(scratch, "state")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if err := st.Materialize(dir); err != nil {
		return nil, err
	}
	s, err := h.openState(dir, k)
	if err != nil {
		return nil, err
	}
	v, err := vault.FromSession(s)
	if err != nil {
		return nil, err
	}
	defer v.Close()
	v.SharedStorage() // fsck repairs through s, behind v's back
	files := h.validFiles(k)
	if err := h.checkClaims(v, k, files, false); err != nil {
		return nil, err
	}
	rep, err := fsck.Check(context.Background(), s, fsck.Options{})
	if err != nil {
		return nil, fmt.Errorf("fsck: %w", err)
	}
	res := &crashResult{problems: rep.Problems}
	if err := h.allowedProblems(rep.Problems, k, files, true); err != nil {
		return res, err
	}
	// Every pending change kept is a process crash (the daemon killed,
	// the backing file system keeps each completed write, in order):
	// file roots flag nothing there that v1 would not (no bad-root: the
	// DIRTY header is written before the data, the clean one after).
	process := true
	for _, i := range h.rec.Pending(k) {
		process = process && keep(i)
	}
	if process {
		for _, p := range rep.Problems {
			if p.Kind == fsck.KindBadRoot {
				return res, fmt.Errorf("process crash: fsck: %s", fsck.ProblemLine(p))
			}
		}
	}
	if rep.Clean {
		return res, h.checkClaims(v, k, files, true)
	}
	return res, h.repairState(s, v, k, files, res)
}

// openState opens the crash state with one of the passwords allowed at k.
// The KDF runs once per distinct config file and password (unlocked keys
// are remembered): crash states mostly share their config.
func (h *harness) openState(dir string, k int) (*session.Session, error) {
	raw, err := os.ReadFile(path.Join(dir, config.FileName))
	if err != nil {
		return nil, fmt.Errorf("vault does not open: %w", err)
	}
	c, err := config.LoadFile(dir, config.FileName)
	if err != nil {
		return nil, fmt.Errorf("vault does not open: %w", err)
	}
	var errs []error
	for _, pw := range h.passwords(k) {
		key := string(raw) + "\x00" + string(pw)
		master, ok := h.unlocked[key]
		if !ok {
			if master, err = c.Unlock(pw); err != nil {
				errs = append(errs, err)
				continue
			}
			h.unlocked[key] = master
		}
		return session.New(dir, c.Params, master, session.Options{BoundVaultID: h.vaultID, FileRoots: h.roots, CompactRoots: h.roots, TrimmedLeaves: h.roots})
	}
	return nil, fmt.Errorf("vault does not open: %w", errors.Join(errs...))
}

// checkClaims checks every claim that holds at k against vault v. Before
// a repair (strict false) an entry need only exist; after it, a directory
// must list and a symlink read.
func (h *harness) checkClaims(v *vault.Vault, k int, files map[string]fileClaim, strict bool) error {
	for _, p := range slices.Sorted(maps.Keys(files)) {
		c := files[p]
		got, err := v.ReadFile(p)
		if err != nil {
			return fmt.Errorf("file %s, synced at %d: %w", p, c.at, err)
		}
		if !bytes.Equal(got, c.data) {
			return fmt.Errorf("file %s, synced at %d: reads %d bytes, not the %d synced", p, c.at, len(got), len(c.data))
		}
		if xs := h.xattrs(v, p); !maps.EqualFunc(xs, c.xattrs, bytes.Equal) {
			return fmt.Errorf("file %s, synced at %d: xattrs %v, synced %v", p, c.at, slices.Sorted(maps.Keys(xs)), slices.Sorted(maps.Keys(c.xattrs)))
		}
	}
	for _, c := range h.entries {
		if c.at > k || h.touchedBetween(c.path, c.at, k, true) {
			continue
		}
		if err := entryOK(v, c.path, strict); err != nil {
			return fmt.Errorf("entry %s, its directory synced at %d: %w", c.path, c.at, err)
		}
	}
	for _, p := range slices.Sorted(maps.Keys(h.linked)) {
		if _, err := v.Stat(p); err != nil {
			continue
		}
		if got, err := v.ReadFile(p); err != nil || !bytes.Equal(got, h.linked[p]) {
			return fmt.Errorf("hard link %s exists but reads %d bytes, %v", p, len(got), err)
		}
	}
	for _, r := range h.renames {
		if r.start >= k || h.touchedBetween(r.from, r.end, k, true) || h.touchedBetween(r.to, r.end, k, true) {
			continue
		}
		if entryOK(v, r.from, strict) != nil && entryOK(v, r.to, strict) != nil {
			return fmt.Errorf("rename %s -> %s (ops %d-%d): neither name exists", r.from, r.to, r.start, r.end)
		}
	}
	return nil
}

// entryOK checks that p exists and, if strict, that a directory lists and
// a symlink reads.
func entryOK(v *vault.Vault, p string, strict bool) error {
	fi, err := v.Stat(p)
	if err != nil || !strict {
		return err
	}
	switch {
	case fi.IsDir():
		_, err = v.ReadDir(p)
	case fi.Mode()&fs.ModeSymlink != 0:
		_, err = v.Readlink(p)
	}
	return err
}

// leftoverKinds are the leftovers of an interrupted operation that
// fsck --repair removes.
var leftoverKinds = map[fsck.Kind]bool{
	fsck.KindTemp: true, fsck.KindOrphanSidecar: true, fsck.KindOrphanLinks: true,
}

// allowedProblems checks that every problem is one a crash may leave:
// data damage that dataDamageOK allows, and (before repair) the leftovers
// and lost directory IDs that fsck --repair fixes.
func (h *harness) allowedProblems(ps []fsck.Problem, k int, files map[string]fileClaim, beforeRepair bool) error {
	for _, p := range ps {
		switch {
		case h.dataDamageOK(p, k, files):
		case beforeRepair && leftoverKinds[p.Kind]:
		case beforeRepair && p.Kind == fsck.KindDirID:
		case beforeRepair && p.Kind == fsck.KindStaleBinding:
		case (p.Kind == fsck.KindDirtyRoot || p.Kind == fsck.KindBadRoot) && h.rootProblemOK(p, ps, files, beforeRepair):
		default:
			return fmt.Errorf("fsck: %s", fsck.ProblemLine(p))
		}
	}
	return nil
}

// dataDamageOK reports whether data problem p is damage a crash at k may
// leave in its file (docs/format.md, "Crash consistency"): none in a file
// whose claim holds; anything in a file never synced; in a file changed
// since its last fsync, none if the changes kept its size (each chunk is
// rewritten in one write, so each reads old or new; a SPARSE change of the
// header is ordered by an fsync against the holes it allows), and if they
// resized it, bad chunks only inside the chunks they covered and
// truncation or an impossible size; never a bad header (the header is
// rewritten in one 36-byte write that keeps the file ID).
func (h *harness) dataDamageOK(p fsck.Problem, k int, files map[string]fileClaim) bool {
	switch p.Kind {
	case fsck.KindChunk, fsck.KindTruncated, fsck.KindSize, fsck.KindHeader:
	default:
		return false
	}
	plain := strings.TrimPrefix(p.PlainPath, "/")
	if _, ok := files[plain]; ok || plain == "" {
		return false
	}
	last := -1
	for _, c := range h.files {
		if c.path == plain && c.at <= k {
			last = max(last, c.at)
		}
	}
	if last < 0 {
		return true // never synced
	}
	const cs = 4096 // cheap.ChunkSize
	var spans [][2]int64
	resized := false
	for _, tc := range h.touches {
		if tc.at < last || tc.at >= k || !under(plain, tc.path) {
			continue
		}
		if tc.hi < 0 || tc.path != plain {
			return true // replaced, or moved: not a change we bound
		}
		// The engine re-seals whole chunks, and the old last chunk of
		// a file it resizes.
		spans = append(spans, [2]int64{tc.lo / cs * cs, (tc.hi + cs - 1) / cs * cs})
		resized = resized || tc.resize
	}
	if !resized {
		return false
	}
	switch p.Kind {
	case fsck.KindChunk:
		for _, r := range p.Ranges {
			if !slices.ContainsFunc(spans, func(s [2]int64) bool { return s[0] <= r.Start && r.End <= s[1] }) {
				return false
			}
		}
		return true
	case fsck.KindTruncated, fsck.KindSize:
		return true
	}
	return false
}

// repairState runs fsck --repair on a crash state with problems and checks
// that afterwards fsck finds nothing but data damage in unclaimed files,
// and that every claim holds, strictly (directories list, symlinks read).
func (h *harness) repairState(s *session.Session, v *vault.Vault, k int, files map[string]fileClaim, res *crashResult) error {
	rr, err := fsck.Repair(context.Background(), s, nil)
	if err != nil {
		return fmt.Errorf("repair: %w", err)
	}
	res.fixes = rr.Fixes
	if len(rr.Failed) > 0 {
		return fmt.Errorf("repair failed: %s", strings.Join(rr.Failed, "; "))
	}
	if err := h.allowedProblems(rr.After.Problems, k, files, false); err != nil {
		return fmt.Errorf("after repair (%d fixes): %w", len(rr.Fixes), err)
	}
	if err := h.checkClaims(v, k, files, true); err != nil {
		return fmt.Errorf("after repair: %w", err)
	}
	return nil
}
