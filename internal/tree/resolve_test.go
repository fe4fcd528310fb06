package tree

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/crypto/names"
)

// TestSyncConflicts: copies "<encname><suffix>" with a sync tool's suffix
// are listed as "<plain><suffix>" when encname authenticates and found by
// Resolve, read-only; a conflict copy of a symlink still reads its target.
// Any other suffix (bidi override, newline, free text) makes the entry
// undecryptable: not listed, not found.
func TestSyncConflicts(t *testing.T) {
	tr, dir, root, id := newTestTree(t)
	f := mustName(t, tr, id, "report.txt")
	fd, err := tr.Create(NewDir(root, nil, nil), f, 0, 0o600)
	must(t, err)
	backing.Close(fd)
	l := mustName(t, tr, id, "link")
	must(t, tr.Symlink(NewDir(root, id, nil), l, "target"))
	good := []string{" (conflicted copy 2026-11-22)", ".sync-conflict-20261122-101010-ABCDEFG", " (Ann's conflicted copy 2026-11-22)"}
	for _, sfx := range good {
		must(t, os.Link(filepath.Join(dir, f.Backing), filepath.Join(dir, f.Backing+sfx)))
	}
	forged := []string{"\u202etxt.sh", ".sh", "\n", " copy", "~", " (1)\x1b[2J"}
	for _, sfx := range forged {
		must(t, os.Link(filepath.Join(dir, f.Backing), filepath.Join(dir, f.Backing+sfx)))
	}
	must(t, os.Symlink(mustReadlink(t, filepath.Join(dir, l.Backing)), filepath.Join(dir, l.Backing+" (1)")))
	must(t, os.WriteFile(filepath.Join(dir, "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA (1)"), nil, 0o600)) // does not authenticate
	ents, bad, err := tr.List(NewDir(root, id, nil))
	must(t, err)
	if len(bad) != len(forged)+1 {
		t.Fatalf("bad entries %+v, want %d", bad, len(forged)+1)
	}
	m := map[string]bool{}
	for _, e := range ents {
		m[e.Name.Plain] = true
	}
	if len(m) != 2+len(good)+1 {
		t.Fatalf("listed %v", m)
	}
	for _, sfx := range append(good, " (1)") {
		want := "report.txt" + sfx
		if sfx == " (1)" {
			want = "link (1)"
		}
		if !m[want] {
			t.Errorf("%q not listed: %v", want, m)
		}
		n, _, err := tr.Resolve(NewDir(root, id, nil), want, false)
		if err != nil || n.Plain != want || !errors.Is(n.ReadOnly(), ErrReadOnly) {
			t.Errorf("Resolve(%q) = %+v, %v", want, n, err)
		}
	}
	for _, sfx := range forged {
		if _, _, err := tr.Resolve(NewDir(root, id, nil), "report.txt"+sfx, true); !errors.Is(err, ErrNotFound) {
			t.Errorf("forged suffix %q resolves: %v", sfx, err)
		}
	}
	n, _, err := tr.Resolve(NewDir(root, id, nil), "link (1)", false)
	must(t, err)
	if got, err := tr.Symlinks().Readlink(NewDir(root, id, nil), n); err != nil || got != "target" {
		t.Fatalf("conflict symlink: %q %v", got, err)
	}
	if n, _, err := tr.Resolve(NewDir(root, id, nil), "report.txt", false); err != nil || n.Alias() || n.ReadOnly() != nil {
		t.Fatalf("Resolve(report.txt) = %+v, %v", n, err)
	}
	if _, _, err := tr.Resolve(NewDir(root, id, nil), "report.txt (2)", false); !errors.Is(err, ErrNotFound) || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing conflict: %v", err)
	}
	if MayBeAlias("abc", true) || MayBeAlias("a b", false) || !MayBeAlias("a (1)", false) || !MayBeAlias("x"+BadNameSuffix, true) {
		t.Fatal("MayBeAlias")
	}
}

// TestConflictDedup: a displayed name belongs to one entry. A real entry
// hides a conflict copy shown under its name; of two copies of a long name
// shown under one name, the lowest backing name wins. List and Resolve
// agree, and the hidden ones are reported as ErrShadowed.
func TestConflictDedup(t *testing.T) {
	tr, dir, root, id := newTestTree(t)
	create := func(plain string) Name {
		n := mustName(t, tr, id, plain)
		fd, err := tr.Create(NewDir(root, nil, nil), n, 0, 0o600)
		must(t, err)
		backing.Close(fd)
		return n
	}
	a := create("a")
	real := create("a (1)")
	must(t, os.Link(filepath.Join(dir, a.Backing), filepath.Join(dir, a.Backing+" (1)")))

	long := strings.Repeat("x", 200)
	ln := create(long)
	if !ln.Long {
		t.Fatal("not a long name")
	}
	h := strings.TrimPrefix(ln.Backing, names.LongNamePrefix)
	appended := ln.Backing + " (2)"
	inserted := "encryptfs.long (2)." + h // ' ' < '.': the lower backing name
	must(t, os.Link(filepath.Join(dir, ln.Backing), filepath.Join(dir, appended)))
	must(t, os.Link(filepath.Join(dir, ln.Backing), filepath.Join(dir, inserted)))

	ents, bad, err := tr.List(NewDir(root, id, nil))
	must(t, err)
	count := map[string]int{}
	byName := map[string]Name{}
	for _, e := range ents {
		count[e.Name.Plain]++
		byName[e.Name.Plain] = e.Name
	}
	for p, c := range count {
		if c != 1 {
			t.Errorf("%q listed %d times", p, c)
		}
	}
	if byName["a (1)"].Backing != real.Backing || byName[long+" (2)"].Backing != inserted {
		t.Fatalf("winners: %+v / %+v", byName["a (1)"], byName[long+" (2)"])
	}
	shadowed := map[string]bool{}
	for _, b := range bad {
		if !errors.Is(b.Err, ErrShadowed) {
			t.Errorf("bad %q: %v", b.Backing, b.Err)
		}
		shadowed[b.Backing] = true
	}
	if len(shadowed) != 2 || !shadowed[a.Backing+" (1)"] || !shadowed[appended] {
		t.Fatalf("shadowed %v", shadowed)
	}
	for p, want := range map[string]string{"a (1)": real.Backing, long + " (2)": inserted} {
		n, _, err := tr.Resolve(NewDir(root, id, nil), p, true)
		if err != nil || n.Backing != want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", p, n.Backing, err, want)
		}
	}
	// A hidden copy is not reachable as an undecryptable entry either.
	if _, _, err := tr.Resolve(NewDir(root, id, nil), appended+BadNameSuffix, true); !errors.Is(err, ErrNotFound) {
		t.Fatalf("shadowed copy as bad name: %v", err)
	}
}

// TestResolveBadName: with showBad, an undecryptable entry is found as
// "<backing>.encryptfs-bad-name", read-only; a good entry never is.
func TestResolveBadName(t *testing.T) {
	tr, dir, root, id := newTestTree(t)
	f := mustName(t, tr, id, "doc")
	fd, err := tr.Create(NewDir(root, nil, nil), f, 0, 0o600)
	must(t, err)
	backing.Close(fd)
	must(t, os.WriteFile(filepath.Join(dir, "desktop.ini"), nil, 0o600))
	n, _, err := tr.Resolve(NewDir(root, id, nil), "desktop.ini"+BadNameSuffix, true)
	if err != nil || n.Backing != "desktop.ini" || !errors.Is(n.ReadOnly(), ErrReadOnly) {
		t.Fatalf("bad name: %+v %v", n, err)
	}
	if _, _, err := tr.Resolve(NewDir(root, id, nil), "desktop.ini"+BadNameSuffix, false); !errors.Is(err, ErrNotFound) {
		t.Fatalf("bad name without showBad: %v", err)
	}
	if _, _, err := tr.Resolve(NewDir(root, id, nil), f.Backing+BadNameSuffix, true); !errors.Is(err, ErrNotFound) {
		t.Fatalf("good entry as bad name: %v", err)
	}
}

// TestConflictDedupAltDirID: a direct conflict copy "<enc> (1)" and an
// entry made under a conflicting directory ID kept as
// "encryptfs.dirid (1)" are both shown as "a (1)". List and Resolve pick
// the same one (the lower backing name) whichever kind it is, and List
// reports the other as shadowed.
func TestConflictDedupAltDirID(t *testing.T) {
	for _, altWins := range []bool{true, false} {
		t.Run(map[bool]string{true: "alt lower", false: "direct lower"}[altWins], func(t *testing.T) {
			tr, dir, root, id := newTestTree(t)
			a := mustName(t, tr, id, "a")
			fd, err := tr.Create(NewDir(root, nil, nil), a, 0, 0o600)
			must(t, err)
			backing.Close(fd)
			direct := a.Backing + " (1)"
			must(t, os.Link(filepath.Join(dir, a.Backing), filepath.Join(dir, direct)))
			// A conflicting ID under which "a" sorts on the wanted side.
			var alt Name
			for {
				other, err := tr.DirIDs().New()
				must(t, err)
				alt = mustName(t, tr, other, "a")
				if (alt.Backing < direct) == altWins {
					must(t, os.WriteFile(filepath.Join(dir, names.DirIDFile+" (1)"), other, 0o400))
					break
				}
			}
			must(t, os.WriteFile(filepath.Join(dir, alt.Backing), []byte("other side"), 0o600))
			want := direct
			if altWins {
				want = alt.Backing
			}

			ents, bad, err := tr.List(NewDir(root, id, nil))
			must(t, err)
			var listed []string
			for _, e := range ents {
				if e.Name.Plain == "a (1)" {
					listed = append(listed, e.Name.Backing)
				}
			}
			if len(listed) != 1 || listed[0] != want {
				t.Fatalf("listed as %q: %q, want %q", "a (1)", listed, want)
			}
			if len(bad) != 1 || !errors.Is(bad[0].Err, ErrShadowed) {
				t.Fatalf("bad: %+v", bad)
			}
			n, _, err := tr.Resolve(NewDir(root, id, nil), "a (1)", false)
			if err != nil || n.Backing != want {
				t.Fatalf("Resolve = %q, %v; want %q", n.Backing, err, want)
			}
		})
	}
}
