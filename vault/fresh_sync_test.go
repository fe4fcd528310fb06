package vault

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/encryptfs/encryptfs/internal/fresh"
	"golang.org/x/sys/unix"
)

// TestFreshnessTwoDevicesSync: two devices (two local states) write one
// vault kept in two places, synced file by file in a random order, as a
// sync tool does. After every file a sync delivers, freshness status at
// the receiving place must not report a rollback (at most "behind"), and
// it must be OK when the sync is complete.
func TestFreshnessTwoDevicesSync(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { twoDevices(t, seed) })
	}
}

func twoDevices(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	tmp := t.TempDir()
	place := [2]string{filepath.Join(tmp, "one"), filepath.Join(tmp, "two")}
	state := [2]string{filepath.Join(tmp, "state-a"), filepath.Join(tmp, "state-b")}
	top := [2]string{"A", "B"}
	for _, p := range place {
		os.Mkdir(p, 0o700)
	}
	v := freshCreate(t, place[0], state[0])
	if err := v.Mkdir("A", 0o700); err != nil {
		t.Fatal(err)
	}
	mustClose(t, v)
	behind := 0
	syncPlaces(t, rng, place[0], place[1], state[1], &behind)
	v = freshOpen(t, place[1], state[1])
	if err := v.Mkdir("B", 0o700); err != nil {
		t.Fatal(err)
	}
	mustClose(t, v)
	syncPlaces(t, rng, place[1], place[0], state[0], &behind)
	for round := range 8 {
		w := round % 2
		v := freshOpen(t, place[w], state[w])
		for range 2 + rng.IntN(5) {
			randomChange(t, rng, v, top[w])
		}
		mustClose(t, v)
		wantOK(t, freshCheck(t, place[w], state[w], false))
		syncPlaces(t, rng, place[w], place[1-w], state[1-w], &behind)
	}
	if behind == 0 {
		t.Error("no partial state was ever behind: the test syncs too little to mean anything")
	}
	t.Logf("%d partial states reported behind", behind)
}

// randomChange makes one change under top in v.
func randomChange(t *testing.T, rng *rand.Rand, v *Vault, top string) {
	t.Helper()
	var dirs, files []string
	var walk func(string)
	walk = func(d string) {
		dirs = append(dirs, d)
		ents, err := v.ReadDir(d)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if e.IsDir() {
				walk(path.Join(d, e.Name()))
			} else {
				files = append(files, path.Join(d, e.Name()))
			}
		}
	}
	walk(top)
	name := fmt.Sprintf("n%d", rng.IntN(1000))
	var err error
	switch op := rng.IntN(7); {
	case op == 0 || len(files) == 0:
		err = v.WriteFile(path.Join(dirs[rng.IntN(len(dirs))], name), []byte(name), 0o600)
	case op == 1:
		err = v.WriteFile(files[rng.IntN(len(files))], []byte("changed "+name), 0o600)
	case op == 2:
		err = v.Remove(files[rng.IntN(len(files))])
	case op == 3:
		err = v.Mkdir(path.Join(dirs[rng.IntN(len(dirs))], name), 0o700)
	case op == 4:
		f := files[rng.IntN(len(files))]
		err = v.Rename(f, path.Join(dirs[rng.IntN(len(dirs))], name))
	case op == 5:
		err = v.SetXattr(files[rng.IntN(len(files))], "user.x", []byte(name))
	default:
		d := dirs[rng.IntN(len(dirs))]
		if err = v.Remove(d); errors.Is(err, fs.ErrExist) || errors.Is(err, unix.ENOTEMPTY) || d == top {
			err = v.SetXattr(d, "user.d", []byte(name))
		}
	}
	if err != nil && !errors.Is(err, fs.ErrExist) {
		t.Fatal(err)
	}
}

// syncPlaces makes to a copy of from one backing file at a time, in a
// random order (a directory before what it holds, a directory's removal
// after its contents'), checking freshness at to with state after each.
func syncPlaces(t *testing.T, rng *rand.Rand, from, to, state string, behind *int) {
	t.Helper()
	items := diffPlaces(t, from, to)
	rng.Shuffle(len(items), func(i, j int) { items[i], items[j] = items[j], items[i] })
	// The config first: without it nothing opens (and it never changes).
	if i := slices.Index(items, "+encryptfs.conf"); i >= 0 {
		items[0], items[i] = items[i], items[0]
	}
	check := func(after string) {
		t.Helper()
		rep := freshCheck(t, to, state, false)
		if rep.Status == fresh.RolledBack {
			t.Fatalf("a partial sync (after %s) reported a rollback:\n%s", after, rep)
		}
		if rep.Status == fresh.Behind {
			*behind++
		}
	}
	for len(items) > 0 {
		it := items[0]
		items = items[1:]
		// Some sync tools replace a file by deleting it first (Syncthing
		// was seen to): half the time, the freshness files are.
		dst := filepath.Join(to, it[1:])
		if it[0] == '+' && strings.Contains(it, "encryptfs.") && rng.IntN(2) == 0 {
			if err := os.Remove(dst); err == nil {
				check("removing " + it[1:] + " to replace it")
			}
		}
		if !applyItem(t, from, to, it) {
			items = append(items, it) // a directory not empty yet
			continue
		}
		check(it)
	}
	if d := diffPlaces(t, from, to); len(d) != 0 {
		t.Fatalf("sync left differences: %v", d)
	}
	wantOK(t, freshCheck(t, to, state, false))
}

// diffPlaces lists what differs: "+rel" (copy from from), "-rel" (remove
// from to).
func diffPlaces(t *testing.T, from, to string) []string {
	t.Helper()
	a, b := listPlace(t, from), listPlace(t, to)
	var out []string
	for rel, da := range a {
		if db, ok := b[rel]; !ok || !bytes.Equal(da, db) {
			out = append(out, "+"+rel)
		}
	}
	for rel := range b {
		if _, ok := a[rel]; !ok {
			out = append(out, "-"+rel)
		}
	}
	slices.Sort(out)
	return out
}

// listPlace maps every backing path to its contents and user xattrs
// (directories: their xattrs only).
func listPlace(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		var b []byte
		if !d.IsDir() {
			if b, err = os.ReadFile(p); err != nil {
				return err
			}
		} else {
			b = []byte("dir\x00")
		}
		out[rel] = append(b, xattrBlob(p)...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func xattrBlob(p string) []byte {
	buf := make([]byte, 1<<16)
	n, _ := unix.Llistxattr(p, buf)
	var list []string
	for _, s := range strings.Split(string(buf[:max(n, 0)]), "\x00") {
		if strings.HasPrefix(s, "user.") {
			list = append(list, s)
		}
	}
	slices.Sort(list)
	var out []byte
	for _, s := range list {
		v := make([]byte, 1<<16)
		m, _ := unix.Lgetxattr(p, s, v)
		out = append(out, []byte("\x00"+s+"=")...)
		out = append(out, v[:max(m, 0)]...)
	}
	return out
}

// applyItem applies one item; false if a directory to remove is not
// empty yet.
func applyItem(t *testing.T, from, to, it string) bool {
	t.Helper()
	rel := it[1:]
	dst := filepath.Join(to, rel)
	if it[0] == '-' {
		err := os.Remove(dst)
		if errors.Is(err, unix.ENOTEMPTY) || errors.Is(err, unix.EEXIST) {
			return false
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
		return true
	}
	src := filepath.Join(from, rel)
	st, err := os.Lstat(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		t.Fatal(err)
	}
	if st.IsDir() {
		if err := os.Mkdir(dst, st.Mode().Perm()); err != nil && !errors.Is(err, fs.ErrExist) {
			t.Fatal(err)
		}
	} else {
		// As a sync tool does: a temporary beside, renamed over.
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		tmp := filepath.Join(filepath.Dir(dst), ".sync."+filepath.Base(dst)+".tmp")
		if err := os.WriteFile(tmp, b, st.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, dst); err != nil {
			t.Fatal(err)
		}
	}
	// Replace the user xattrs.
	buf := make([]byte, 1<<16)
	n, _ := unix.Llistxattr(dst, buf)
	for _, s := range strings.Split(string(buf[:max(n, 0)]), "\x00") {
		if strings.HasPrefix(s, "user.") {
			unix.Lremovexattr(dst, s)
		}
	}
	n, _ = unix.Llistxattr(src, buf)
	for _, s := range strings.Split(string(buf[:max(n, 0)]), "\x00") {
		if strings.HasPrefix(s, "user.") {
			v := make([]byte, 1<<16)
			m, err := unix.Lgetxattr(src, s, v)
			if err != nil {
				t.Fatal(err)
			}
			if err := unix.Lsetxattr(dst, s, v[:m], 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	return true
}
