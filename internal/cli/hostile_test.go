package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/encryptfs/encryptfs/internal/fstest"
	"github.com/encryptfs/encryptfs/vault"
	"golang.org/x/sys/unix"
)

// TestHostileCiphertext (issue 10, item 6) damages a copy of a vault's
// backing tree at random, seeded: flips bytes and truncates files
// (contents, directory IDs, long-name and symlink sidecars), swaps entries
// between directories, deletes and duplicates directory IDs, copies
// entries into other directories, adds garbage names, and plants symlinks
// and FIFOs where files, IDs and sidecars belong. Then, each bounded by a
// deadline, it mounts the tree with the real binary and walks it, and runs
// fsck, export and ls -R. It checks:
//   - nothing panics (the daemon's log, the tools' stderr) or hangs;
//   - every entry whose backing objects were left alone reads back
//     exactly (content, symlink target, xattr) through the mount, export
//     and ls;
//   - a damaged entry is missing or gives EIO (the mount) or a clean
//     error (the tools), and whatever reads is authentic: a name is one of
//     the names written, content and targets are ones written; never
//     other bytes;
//   - fsck reports the damage (exit 26) and the tools exit 0 or 11.
//
// ENCRYPTFS_HOSTILE_ROUNDS sets the number of rounds (seeds 1..N); the
// default keeps the test near 30 s.
func TestHostileCiphertext(t *testing.T) {
	fstest.RequireFUSE(t)
	pristine, pf := hostileVault(t)
	rounds := 24
	if n, err := strconv.Atoi(os.Getenv("ENCRYPTFS_HOSTILE_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	for seed := uint64(1); seed <= uint64(rounds); seed++ {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "cipher")
			if out, err := exec.Command("cp", "-a", pristine.dir, dir).CombinedOutput(); err != nil {
				t.Fatalf("cp: %v %s", err, out)
			}
			r := rand.New(rand.NewPCG(seed, 0x405711e))
			touched, log := damage(t, r, dir, 1+r.IntN(3), pristine.keyer())
			t.Logf("damage: %s", strings.Join(log, "; "))
			intact := pristine.intact(touched)
			h := &hostileCheck{t: t, v: pristine, intact: intact, what: strings.Join(log, "; ")}
			h.onlyFIFOs = len(log) > 0
			for _, l := range log {
				if !strings.HasPrefix(l, "fifo at ") || strings.Contains(l, "#") {
					h.onlyFIFOs = false
				}
			}
			if os.Getenv("ENCRYPTFS_HOSTILE_KEEP") != "" {
				t.Logf("damaged copy: %s", dir)
				t.Cleanup(func() { exec.Command("cp", "-a", dir, os.Getenv("ENCRYPTFS_HOSTILE_KEEP")).Run() })
			}
			h.mountAndWalk(dir, pf)
			h.fsck(dir, pf)
			h.export(dir, pf)
			h.ls(dir, pf)
		})
	}
}

// hostileEntry is one plaintext entry of the test vault.
type hostileEntry struct {
	path    string // plaintext path
	backing string // backing path relative to CIPHERDIR
	kind    fs.FileMode
	content []byte // a file's content
	target  string // a symlink's target
	xattr   string // value of user.color, "" for none
}

// hostileTree is the pristine vault and what it holds.
type hostileTree struct {
	dir     string
	entries map[string]*hostileEntry // by plaintext path
}

// hostileVault makes the vault every round damages a copy of: files of
// sizes around the 4 KiB chunk, nested and long-named directories, a
// long-named file, short and long symlinks, xattrs on files and a
// directory.
func hostileVault(t *testing.T) (*hostileTree, string) {
	t.Helper()
	dir, _ := newVault(t, "pw", "--chunk-size", "4k")
	v, err := vault.Open(dir, []byte("pw"))
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	h := &hostileTree{dir: dir, entries: map[string]*hostileEntry{}}
	r := rand.New(rand.NewPCG(42, 42))
	long1, long2 := strings.Repeat("L", 170), strings.Repeat("M", 165)
	for _, d := range []string{"d1", "d1/sub", "d2", "d2/" + long2, "d3"} {
		mustDo(t, v.Mkdir(d, 0o755))
		h.entries[d] = &hostileEntry{path: d, kind: fs.ModeDir}
	}
	files := map[string]int{
		"empty": 0, "one": 1, "f4095": 4095, "f4096": 4096, "f4097": 4097, long1: 300,
		"d1/a": 3*4096 + 7, "d1/b": 100, "d1/sub/c": 5000, "d2/e": 9000, "d2/" + long2 + "/g": 10, "d3/h": 2 * 4096,
	}
	for p, n := range files {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		mustDo(t, v.WriteFile(p, b, 0o644))
		h.entries[p] = &hostileEntry{path: p, kind: 0, content: b}
	}
	links := map[string]string{"link": "one", "d1/longlink": strings.Repeat("t/", 1500), "d3/up": "../d1/b"}
	for p, target := range links {
		mustDo(t, v.Symlink(target, p))
		h.entries[p] = &hostileEntry{path: p, kind: fs.ModeSymlink, target: target}
	}
	for _, p := range []string{"one", "d1/a", "d1", "f4097"} {
		val := "color-of-" + p
		mustDo(t, v.SetXattr(p, "user.color", []byte(val)))
		h.entries[p].xattr = val
	}
	for p, e := range h.entries {
		b, err := v.EncryptPath(p)
		mustDo(t, err)
		e.backing = b
	}
	return h, writePassfile(t, "pw")
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// intact returns the plaintext paths none of whose backing objects are
// in touched: the entry itself, its long-name sidecar, a symlink's target
// sidecars, and every directory above it with its encryptfs.dirid.
func (h *hostileTree) intact(touched map[string]bool) map[string]bool {
	out := map[string]bool{}
	hit := func(p string) bool { return touched[p] }
	for p, e := range h.entries {
		ok := !hit(e.backing) && !hit(e.backing+".name")
		if e.kind == fs.ModeSymlink {
			for q := range touched {
				if path.Dir(q) == path.Dir(e.backing) && strings.HasPrefix(path.Base(q), "encryptfs.link.") {
					ok = false
				}
			}
		}
		// Every directory above, the root included.
		for d := path.Dir(e.backing); ok; d = path.Dir(d) {
			if d == "." {
				ok = !hit("encryptfs.dirid")
				break
			}
			ok = !hit(d) && !hit(d+".name") && !hit(d+"/encryptfs.dirid")
		}
		if e.kind == fs.ModeDir && ok {
			ok = !hit(e.backing + "/encryptfs.dirid")
		}
		if ok {
			out[p] = true
		}
	}
	return out
}

// damage applies n seeded mutations to the backing tree in dir and
// returns the backing paths (relative) they changed, removed or created,
// and a description.
func damage(t *testing.T, r *rand.Rand, dir string, n int, key func(string) string) (map[string]bool, []string) {
	t.Helper()
	touched := map[string]bool{}
	var log []string
	for range n {
		var files, dirs []string
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			rel, _ := filepath.Rel(dir, p)
			switch {
			case err != nil || rel == "encryptfs.conf":
			case d.IsDir():
				dirs = append(dirs, rel)
			case d.Type().IsRegular():
				files = append(files, rel)
			}
			return nil
		})
		// Sorted by what they stand for, not by their random backing
		// names, so that a seed picks the same targets in every run.
		byKey := func(a, b string) int { return strings.Compare(key(a), key(b)) }
		slices.SortFunc(files, byKey)
		slices.SortFunc(dirs, byKey)
		pick := func(list []string) string { return list[r.IntN(len(list))] }
		abs := func(rel string) string { return filepath.Join(dir, rel) }
		switch k := r.IntN(10); k {
		case 0: // flip a byte
			f := pick(files)
			b, _ := os.ReadFile(abs(f))
			if len(b) == 0 {
				continue
			}
			i := r.IntN(len(b))
			b[i] ^= byte(1 + r.IntN(255))
			mustDo(t, os.WriteFile(abs(f), b, 0o644))
			touched[f] = true
			log = append(log, fmt.Sprintf("flip byte %d of %s", i, f))
		case 1: // truncate
			f := pick(files)
			fi, _ := os.Stat(abs(f))
			if fi.Size() == 0 {
				continue
			}
			size := r.Int64N(fi.Size())
			mustDo(t, os.Truncate(abs(f), size))
			touched[f] = true
			log = append(log, fmt.Sprintf("truncate %s to %d", f, size))
		case 2: // swap two entries between directories
			a, b := pick(append(files, dirs...)), pick(append(files, dirs...))
			if a == "." || b == "." || path.Dir(a) == path.Dir(b) || strings.HasPrefix(b, a+"/") || strings.HasPrefix(a, b+"/") ||
				path.Base(a) == "encryptfs.dirid" || path.Base(b) == "encryptfs.dirid" {
				continue
			}
			na, nb := path.Join(path.Dir(b), path.Base(a)), path.Join(path.Dir(a), path.Base(b))
			mustDo(t, os.Rename(abs(a), abs(na)))
			mustDo(t, os.Rename(abs(b), abs(nb)))
			for _, p := range []string{a, b, na, nb} {
				touched[p] = true
			}
			log = append(log, fmt.Sprintf("swap %s and %s", a, b))
		case 3: // delete a directory ID
			d := pick(dirs)
			id := path.Join(d, "encryptfs.dirid")
			os.Remove(abs(id))
			touched[id] = true
			log = append(log, "delete "+id)
		case 4: // duplicate a directory ID into another directory
			from, to := pick(dirs), pick(dirs)
			if from == to {
				continue
			}
			b, err := os.ReadFile(abs(path.Join(from, "encryptfs.dirid")))
			if err != nil {
				continue
			}
			id := path.Join(to, "encryptfs.dirid")
			os.Chmod(abs(id), 0o600)
			mustDo(t, os.WriteFile(abs(id), b, 0o400))
			touched[id] = true
			log = append(log, fmt.Sprintf("copy %s/encryptfs.dirid to %s", from, id))
		case 5: // copy an entry into another directory, same name
			f, d := pick(files), pick(dirs)
			if path.Dir(f) == d || path.Base(f) == "encryptfs.dirid" {
				continue
			}
			dst := path.Join(d, path.Base(f))
			b, _ := os.ReadFile(abs(f))
			mustDo(t, os.WriteFile(abs(dst), b, 0o644))
			touched[dst] = true
			log = append(log, fmt.Sprintf("copy %s to %s", f, dst))
		case 6: // corrupt a sidecar, or any file, with garbage
			var sidecars []string
			for _, f := range files {
				if b := path.Base(f); strings.HasSuffix(b, ".name") || strings.HasPrefix(b, "encryptfs.link.") {
					sidecars = append(sidecars, f)
				}
			}
			if len(sidecars) == 0 {
				continue
			}
			f := pick(sidecars)
			os.Chmod(abs(f), 0o600)
			garbage := make([]byte, r.IntN(400))
			for i := range garbage {
				garbage[i] = byte(r.Uint32())
			}
			mustDo(t, os.WriteFile(abs(f), garbage, 0o400))
			touched[f] = true
			log = append(log, fmt.Sprintf("garbage (%d bytes) in %s", len(garbage), f))
		case 7: // a garbage name
			d := pick(dirs)
			name := garbageName(r)
			p := path.Join(d, name)
			if _, err := os.Lstat(abs(p)); err == nil {
				continue
			}
			if r.IntN(2) == 0 {
				mustDo(t, os.WriteFile(abs(p), []byte("garbage"), 0o644))
			} else {
				mustDo(t, os.Mkdir(abs(p), 0o755))
			}
			touched[p] = true
			log = append(log, fmt.Sprintf("garbage name %q in %s", name, d))
		case 8, 9: // a symlink or a FIFO where a file (content, ID, sidecar) belongs
			f := pick(files)
			os.Remove(abs(f))
			if k == 8 {
				target := pick([]string{"/etc/passwd", "/dev/zero", "../" + path.Base(f), pick(files)})
				mustDo(t, os.Symlink(target, abs(f)))
				log = append(log, fmt.Sprintf("symlink %s -> %s", f, target))
			} else {
				mustDo(t, unix.Mkfifo(abs(f), 0o644))
				log = append(log, "fifo at "+f)
			}
			touched[f] = true
		}
	}
	for i, l := range log {
		for p := range touched {
			l = strings.ReplaceAll(l, p, key(p))
		}
		log[i] = l
	}
	return touched, log
}

// keyer returns a function that names a backing path (relative) by what
// it stands for in the pristine vault: "d1/a", "d1#dirid", "L...L#name",
// "d1#link"; names the vault never made stay as they are.
func (h *hostileTree) keyer() func(string) string {
	base := map[string]string{}
	for p, e := range h.entries {
		b, plain := path.Base(e.backing), path.Base(p)
		base[b] = plain
		base[b+".name"] = plain + "#name"
	}
	return func(rel string) string {
		var out []string
		for _, c := range strings.Split(rel, "/") {
			switch k, ok := base[c]; {
			case c == ".":
			case ok:
				out = append(out, k)
			case c == "encryptfs.dirid":
				out = append(out, "#dirid")
			case strings.HasPrefix(c, "encryptfs.link."):
				out = append(out, "#link")
			default:
				out = append(out, c)
			}
		}
		return strings.Join(out, "/")
	}
}

// garbageName returns a name that is not a valid encrypted name: random
// b64url, a reserved prefix, a long-name form without a sidecar, control
// characters.
func garbageName(r *rand.Rand) string {
	const b64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	rnd := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = b64[r.IntN(len(b64))]
		}
		return string(b)
	}
	switch r.IntN(5) {
	case 0:
		return rnd(1 + r.IntN(250))
	case 1:
		return "encryptfs.long." + rnd(43)
	case 2:
		return "encryptfs." + rnd(8)
	case 3:
		return rnd(22) + "\n\x1b[31m"
	default:
		return rnd(22) + ".sync-conflict-20240101-101010-ABCDEFG"
	}
}

// hostileCheck checks one damaged copy.
type hostileCheck struct {
	t      *testing.T
	v      *hostileTree
	intact map[string]bool
	what   string
	// onlyFIFOs: the damage is FIFOs planted in place of entries and
	// nothing fsck can see.
	onlyFIFOs bool
}

// authentic reports whether b is the content of some file of the vault.
func (h *hostileCheck) authentic(b []byte) bool {
	for _, e := range h.v.entries {
		if e.kind == 0 && bytes.Equal(e.content, b) {
			return true
		}
	}
	return false
}

// authenticPrefix reports whether b is a prefix of some file's content
// that ends at a 4 KiB chunk boundary or at the file's end (what a read
// can deliver before the first failing chunk).
func (h *hostileCheck) authenticPrefix(b []byte) bool {
	for _, e := range h.v.entries {
		if e.kind == 0 && bytes.HasPrefix(e.content, b) && (len(b)%4096 == 0 || len(b) == len(e.content)) {
			return true
		}
	}
	return false
}

func (h *hostileCheck) knownName(name string) bool {
	for p := range h.v.entries {
		if path.Base(p) == name {
			return true
		}
	}
	return false
}

// mountAndWalk mounts dir with the binary in the foreground, walks the
// mount, and unmounts; a walk that does not end in 60 s fails the test.
func (h *hostileCheck) mountAndWalk(dir, pf string) {
	t := h.t
	mnt := t.TempDir()
	cleanupMount(t, mnt)
	cmd := exec.Command(binary, "mount", "-f", "--passfile", pf, dir, mnt)
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			t.Errorf("the daemon did not exit after unmount; log:\n%s", stderr.String())
		}
		if s := stderr.String(); strings.Contains(s, "panic") || strings.Contains(s, "goroutine ") {
			t.Errorf("%s: the daemon's log:\n%s", h.what, s)
		}
	}()
	for i := 0; !isMounted(t, mnt); i++ {
		select {
		case err := <-exited:
			// The root's ID is gone or planted: the mount may refuse.
			t.Logf("mount refused: %v\n%s", err, stderr.String())
			exited <- err
			for p := range h.intact {
				t.Errorf("%s: mount refused, but %s is intact", h.what, p)
				break
			}
			return
		case <-time.After(100 * time.Millisecond):
		}
		if i > 200 {
			t.Fatalf("not mounted after 20 s")
		}
	}
	done := make(chan map[string]string, 1)
	go func() { done <- h.walk(mnt) }()
	var seen map[string]string
	select {
	case seen = <-done:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		unix.Unmount(mnt, unix.MNT_DETACH)
		t.Fatalf("%s: the walk of the mount hung; daemon log:\n%s", h.what, stderr.String())
	}
	run(t, "", "unmount", mnt).want(t, 0)
	for p := range h.intact {
		e := h.v.entries[p]
		if got, want := seen[p], describe(e); got != want {
			t.Errorf("%s: intact %s through the mount: %q, want %q", h.what, p, trim(got), trim(want))
		}
	}
}

// walk visits every entry of the mount and describes what it found:
// "dir", "file:<content>", "link:<target>", each followed by the xattr,
// or "err:<errno>". It fails the test on bytes that are not authentic.
func (h *hostileCheck) walk(mnt string) map[string]string {
	t := h.t
	seen := map[string]string{}
	var visit func(rel string)
	visit = func(rel string) {
		full := filepath.Join(mnt, rel)
		ents, err := os.ReadDir(full)
		if err != nil {
			h.allowedErr(rel, "readdir", err)
			seen[rel] = "err:" + errName(err)
			return
		}
		for _, d := range ents {
			if !h.knownName(d.Name()) {
				t.Errorf("%s: the mount lists %q in %q: not a name the vault was given", h.what, d.Name(), rel)
				continue
			}
			p := path.Join(rel, d.Name())
			fp := filepath.Join(mnt, p)
			fi, err := os.Lstat(fp)
			if err != nil {
				h.allowedErr(p, "lstat", err)
				seen[p] = "err:" + errName(err)
				continue
			}
			var desc string
			switch {
			case fi.IsDir():
				desc = "dir"
				visit(p)
			case fi.Mode()&fs.ModeSymlink != 0:
				target, err := os.Readlink(fp)
				if err != nil {
					h.allowedErr(p, "readlink", err)
					seen[p] = "err:" + errName(err)
					continue
				}
				if !h.knownTarget(target) {
					t.Errorf("%s: %s reads as a symlink to %q: not a target the vault was given", h.what, p, trim(target))
				}
				desc = "link:" + target
			case fi.Mode().IsRegular():
				b, err := readChunks(fp)
				if err != nil {
					if !h.authenticPrefix(b) {
						t.Errorf("%s: %s delivered %d bytes that are no file's content before %v", h.what, p, len(b), err)
					}
					h.allowedErr(p, "read", err)
					seen[p] = "err:" + errName(err)
					continue
				}
				if !h.authentic(b) {
					t.Errorf("%s: %s reads as %d bytes that are no file's content", h.what, p, len(b))
				}
				desc = "file:" + string(b)
			default:
				desc = "other:" + fi.Mode().String()
			}
			if fi.Mode()&fs.ModeSymlink == 0 {
				buf := make([]byte, 256)
				if n, err := unix.Getxattr(fp, "user.color", buf); err == nil {
					desc += "|xattr:" + string(buf[:n])
				}
			}
			seen[p] = desc
		}
	}
	visit("")
	return seen
}

func (h *hostileCheck) knownTarget(target string) bool {
	for _, e := range h.v.entries {
		if e.kind == fs.ModeSymlink && e.target == target {
			return true
		}
	}
	return false
}

// allowedErr fails the test unless err is EIO or ENOENT (a damaged entry).
func (h *hostileCheck) allowedErr(p, op string, err error) {
	if !errors.Is(err, syscall.EIO) && !errors.Is(err, syscall.ENOENT) {
		h.t.Errorf("%s: %s %s: %v, want EIO or ENOENT", h.what, op, p, err)
	}
}

// describe is what walk should find for an intact entry.
func describe(e *hostileEntry) string {
	var d string
	switch e.kind {
	case fs.ModeDir:
		d = "dir"
	case fs.ModeSymlink:
		return "link:" + e.target
	default:
		d = "file:" + string(e.content)
	}
	if e.xattr != "" {
		d += "|xattr:" + e.xattr
	}
	return d
}

func trim(s string) string {
	if len(s) > 60 {
		return s[:60] + "..."
	}
	return s
}

func errName(err error) string {
	var e syscall.Errno
	if errors.As(err, &e) {
		return e.Error()
	}
	return err.Error()
}

// readChunks reads a file 4 KiB at a time and returns what it read before
// the first error.
func readChunks(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []byte
	buf := make([]byte, 4096)
	for {
		n, err := f.Read(buf)
		out = append(out, buf[:n]...)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
	}
}

// runBounded runs the binary with a 60 s deadline and fails on a panic.
func (h *hostileCheck) runBounded(args ...string) result {
	t := h.t
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%s: %v hung", h.what, args[0])
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run %v: %v", args, err)
	}
	if strings.Contains(errb.String(), "panic") || strings.Contains(errb.String(), "goroutine ") {
		t.Errorf("%s: %s panicked:\n%s", h.what, args[0], errb.String())
	}
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

// fsck must find the damage and neither fail nor crash.
func (h *hostileCheck) fsck(dir, pf string) {
	r := h.runBounded("fsck", "--passfile", pf, dir)
	want := ExitFsckProblems
	if h.what == "" {
		want = ExitOK
	}
	// A FIFO in place of an entry is an entry that is a FIFO: v1 does not
	// authenticate an entry's type (docs/format.md §11).
	if r.code != want && !(r.code == ExitOK && h.onlyFIFOs) {
		h.t.Errorf("%s: fsck exit %d, want %d\n%s%s", h.what, r.code, ExitFsckProblems, r.stdout, r.stderr)
	}
}

// export must write every intact file exactly and nothing unauthentic.
func (h *hostileCheck) export(dir, pf string) {
	t := h.t
	dest := filepath.Join(t.TempDir(), "out")
	r := h.runBounded("export", "--passfile", pf, dir, dest)
	if r.code != ExitOK && r.code != ExitCorruptData {
		t.Errorf("%s: export exit %d\n%s", h.what, r.code, r.stderr)
	}
	filepath.WalkDir(dest, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		b, _ := os.ReadFile(p)
		if !h.authentic(b) {
			rel, _ := filepath.Rel(dest, p)
			t.Errorf("%s: export wrote %s with %d bytes that are no file's content", h.what, rel, len(b))
		}
		return nil
	})
	for p := range h.intact {
		e := h.v.entries[p]
		fp := filepath.Join(dest, p)
		switch e.kind {
		case 0:
			if b, err := os.ReadFile(fp); err != nil || !bytes.Equal(b, e.content) {
				t.Errorf("%s: export of intact %s: %d bytes, %v", h.what, p, len(b), err)
			}
		case fs.ModeSymlink:
			if got, err := os.Readlink(fp); err != nil || got != e.target {
				t.Errorf("%s: export of intact %s: %q, %v", h.what, p, trim(got), err)
			}
		}
	}
}

// ls -R must list every intact entry.
func (h *hostileCheck) ls(dir, pf string) {
	r := h.runBounded("ls", "-R", "--passfile", pf, dir)
	if r.code != ExitOK && r.code != ExitCorruptData {
		h.t.Errorf("%s: ls exit %d\n%s", h.what, r.code, r.stderr)
	}
	lines := strings.Split(r.stdout, "\n")
	for p := range h.intact {
		if !slices.Contains(lines, p) {
			h.t.Errorf("%s: ls -R does not list intact %s", h.what, p)
		}
	}
}
