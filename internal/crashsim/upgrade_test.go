package crashsim_test

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

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/crashsim"
	"github.com/encryptfs/encryptfs/internal/keyslot"
	"github.com/encryptfs/encryptfs/internal/session"
	"github.com/encryptfs/encryptfs/internal/upgrade"
	"github.com/encryptfs/encryptfs/vault"
)

// TestCrashReplayUpgrade replays every crash point of `encryptfs upgrade`
// of a format-1 vault: the config upgrade (format 2, key slots), then the
// content upgrade (location binding: every dirid and file header
// rewritten, every file moved to the roots layout with its tag blocks
// and root, the flags and VaultID written to the config last). Every
// crash state must either open and read the same plaintext as before the
// upgrade (not upgraded yet, or upgraded), or be refused as half-upgraded
// (session.ErrUpgradeIncomplete) and read the same after a second
// upgrade; and from every state, running the upgrade again must finish it
// (a bound vault, the same plaintext). The vault has a file with four
// names, bound through a links file (docs/format.md §14): the crash
// states between its names' relinks are resumed from the links file.
// The upgraded vault's roots are checked: an old chunk spliced back into
// a file reads as corrupt (checkRootsSplice).
func TestCrashReplayUpgrade(t *testing.T) {
	dir := t.TempDir()
	pw := []byte("upgrade password")
	opts := cheap
	opts.Rand = rand.NewChaCha8([32]byte{7})
	v, err := vault.Create(dir, pw, opts)
	if err != nil {
		t.Fatal(err)
	}
	fillUpgradeVault(t, v, dir)
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}
	want := plaintextOf(t, dir, pw)
	for _, p := range []string{"dA/b" + conflictSfx, "dA/sub" + conflictSfx + "/c", "b-root", "d2/linked-too", "d1/sub/multi-4", "multi-3", "dA/multi-5" + conflictSfx, "sparse", "d1/chunk @user.color"} {
		if _, ok := want[p]; !ok {
			t.Fatalf("the test vault lacks %s: %v", p, slices.Sorted(mapKeys(want)))
		}
	}

	rec, err := crashsim.NewRecorder(dir)
	if err != nil {
		t.Fatal(err)
	}
	fsys := backing.NewFS(rec)
	runUpgrade(t, dir, pw, fsys, rand.NewChaCha8([32]byte{8}))
	if err := rec.Err(); err != nil {
		t.Fatal(err)
	}
	if got := plaintextOf(t, dir, pw); !equalPlain(got, want) {
		t.Fatalf("after the upgrade: %s", diffPlain(got, want))
	}
	if c, err := config.Load(dir); err != nil || !c.Params.Bound() || !c.Params.Has(config.FlagFileRoots) {
		t.Fatalf("after the upgrade the config is not bound with file roots: %v", err)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "encryptfs.links.*")); len(m) != 1 {
		t.Fatalf("links files after the upgrade (the four-name file's): %v", m)
	}

	replayUpgrade(t, rec, pw, want, "content upgrade")
	checkRootsSplice(t, dir, pw, "d1/sub/many")
}

// checkUpgradeState checks one crash state in dir: it opens with the same
// plaintext or is refused as half-upgraded; then a second upgrade
// finishes it.
func checkUpgradeState(t *testing.T, dir string, pw []byte, want map[string]string) (refused bool, err error) {
	v, err := vault.Open(dir, pw)
	switch {
	case errors.Is(err, session.ErrUpgradeIncomplete):
		refused = true
	case err != nil:
		return false, fmt.Errorf("open: %w", err)
	default:
		got, err := readPlain(v)
		v.Close()
		if err != nil {
			return false, fmt.Errorf("read: %w", err)
		}
		if !equalPlain(got, want) {
			return false, fmt.Errorf("plaintext: %s", diffPlain(got, want))
		}
	}
	runUpgrade(t, dir, pw, nil, rand.NewChaCha8([32]byte{9}))
	c, err := config.Load(dir)
	if err != nil || !c.Params.Bound() || !c.Params.Has(config.FlagFileRoots) || !c.Params.Has(config.FlagCompactRoots) {
		return refused, fmt.Errorf("after the second upgrade the config is not bound with compact file roots (%v)", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, config.UpgradeMarkerName)); !errors.Is(err, fs.ErrNotExist) {
		return refused, fmt.Errorf("the marker is left after the second upgrade: %v", err)
	}
	v, err = vault.Open(dir, pw)
	if err != nil {
		return refused, fmt.Errorf("open after the second upgrade: %w", err)
	}
	defer v.Close()
	got, err := readPlain(v)
	if err != nil {
		return refused, fmt.Errorf("read after the second upgrade: %w", err)
	}
	if !equalPlain(got, want) {
		return refused, fmt.Errorf("after the second upgrade: %s", diffPlain(got, want))
	}
	return refused, nil
}

// runUpgrade is what `encryptfs upgrade` does: the config to format 2 if
// it is format 1, then the content.
func runUpgrade(t *testing.T, dir string, pw []byte, fsys *backing.FS, r *rand.ChaCha8) {
	t.Helper()
	c, err := config.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !c.IsV2() {
		k, err := session.NewKDFParams(r, 1, 8192, 1)
		if err != nil {
			t.Fatal(err)
		}
		err = session.Upgrade(dir, pw, k, session.Options{Config: c, Backing: fsys, Rand: r})
		if errors.Is(err, fs.ErrExist) && fsys == nil {
			// A crash during the config's atomic write left its
			// temporary; as for passwd, the user removes it (the
			// message says so) and runs the command again.
			mustV(os.Remove(filepath.Join(dir, config.FileName+".tmp")))
			err = session.Upgrade(dir, pw, k, session.Options{Config: c, Rand: r})
		}
		if err != nil {
			t.Fatalf("config upgrade: %v", err)
		}
	}
	s, err := session.OpenWith(dir, keyslot.Credentials{Password: func() ([]byte, error) { return bytes.Clone(pw), nil }},
		session.Options{Backing: fsys, Rand: r, Upgrading: true})
	if err != nil {
		t.Fatalf("open for the upgrade: %v", err)
	}
	defer s.Close()
	if _, err := upgrade.Content(s, nil); err != nil {
		t.Fatalf("content upgrade: %v", err)
	}
}

// fillUpgradeVault gives v1 vault v (in dir) one of everything the
// upgrade converts or must leave alone.
func fillUpgradeVault(t *testing.T, v *vault.Vault, dir string) {
	t.Helper()
	for _, d := range []string{"d1", "d1/sub", "d2", "empty"} {
		mustV(v.Mkdir(d, 0o755))
	}
	mustV(v.WriteFile("zero", nil, 0o644))
	mustV(v.WriteFile("one", []byte{1}, 0o600))
	mustV(v.WriteFile("d1/chunk", data(31, 4096), 0o644))
	mustV(v.WriteFile("d1/sub/many", data(32, 3*4096+5), 0o644))
	mustV(v.WriteFile("d2/"+longName("L"), data(33, 700), 0o644))
	mustV(v.Symlink("d1/chunk", "link"))
	mustV(v.SetXattr("d1/chunk", "user.color", []byte("blue")))
	mustV(v.SetXattr("d1", "user.dir", []byte("yes")))
	// A sparse file: a hole of two chunks between data.
	f, err := v.OpenFile("sparse", os.O_CREATE|os.O_WRONLY, 0o644)
	mustV(err)
	_, err = f.WriteAt([]byte("head"), 0)
	mustV(err)
	_, err = f.WriteAt([]byte("tail"), 3*4096)
	mustV(err)
	mustV(f.Close())
	// A hard link (the vault package has no link call: link the backing
	// entry under the encrypted name of the second name, as the mount does).
	mustV(v.WriteFile("d1/linked", data(34, 5000), 0o644))
	from, err := v.EncryptPath("d1/linked")
	mustV(err)
	to, err := v.EncryptPath("d2/linked-too")
	mustV(err)
	mustV(os.Link(filepath.Join(dir, from), filepath.Join(dir, to)))
	// A file with four names in three directories: more than a v2 header
	// binds, so the upgrade binds them in a links file (format.md §14).
	mustV(v.WriteFile("d1/multi", data(38, 4200), 0o644))
	from, err = v.EncryptPath("d1/multi")
	mustV(err)
	for _, n := range []string{"d2/multi-2", "multi-3", "d1/sub/multi-4"} {
		to, err := v.EncryptPath(n)
		mustV(err)
		mustV(os.Link(filepath.Join(dir, from), filepath.Join(dir, to)))
	}
	conflictCopies(t, v, dir)
}

// conflictSfx is the sync tool's conflict suffix conflictCopies uses.
const conflictSfx = ".sync-conflict-20261122-101010-ABCDEFG"

// conflictCopies makes what a sync tool leaves when a directory dA was
// made on two machines apart (format.md §7.1): the losing side's
// directory ID as a conflict copy in dA, and its entries (a file, a
// directory with a file) beside dA's own, shown as "<name><suffix>". The
// losing file also gets a hard link in the root, so that a hard-linked
// pair spans a directory's conflict copy and a directory later in
// post-order, and so does a fifth name of fillUpgradeVault's four-name
// file.
func conflictCopies(t *testing.T, v *vault.Vault, dir string) {
	sfx := conflictSfx
	t.Helper()
	for _, d := range []string{"dA", "dB", "dB/sub"} {
		mustV(v.Mkdir(d, 0o755))
	}
	mustV(v.WriteFile("dA/a", data(35, 300), 0o644))
	mustV(v.WriteFile("dB/b", data(36, 4500), 0o644))
	mustV(v.WriteFile("dB/sub/c", data(37, 10), 0o644))
	encA, err := v.EncryptPath("dA")
	mustV(err)
	encB, err := v.EncryptPath("dB")
	mustV(err)
	encBb, err := v.EncryptPath("dB/b")
	mustV(err)
	encRoot, err := v.EncryptPath("b-root")
	mustV(err)
	// A fifth name of the four-name file, made under the losing ID: the
	// links file's conversion must come before dA's conflict copy is.
	encMulti, err := v.EncryptPath("d1/multi")
	mustV(err)
	encM5, err := v.EncryptPath("dB/multi-5")
	mustV(err)
	mustV(os.Link(filepath.Join(dir, encMulti), filepath.Join(dir, encM5)))
	a, b := filepath.Join(dir, encA), filepath.Join(dir, encB)
	mustV(os.Rename(filepath.Join(b, "encryptfs.dirid"), filepath.Join(a, "encryptfs.dirid"+sfx)))
	ents, err := os.ReadDir(b)
	mustV(err)
	for _, e := range ents {
		mustV(os.Rename(filepath.Join(b, e.Name()), filepath.Join(a, e.Name())))
	}
	mustV(os.Remove(b))
	mustV(os.Link(filepath.Join(a, filepath.Base(encBb)), filepath.Join(dir, encRoot)))
}

func mapKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// plaintextOf opens the vault in dir and reads its plaintext.
func plaintextOf(t *testing.T, dir string, pw []byte) map[string]string {
	t.Helper()
	v, err := vault.Open(dir, pw)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	m, err := readPlain(v)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// readPlain maps every path of v to what it holds: a file's bytes, a
// symlink's target, a directory's marker, and each xattr.
func readPlain(v *vault.Vault) (map[string]string, error) {
	m := map[string]string{}
	var walk func(dir string) error
	walk = func(dir string) error {
		ents, err := v.ReadDir(dir)
		if err != nil {
			return err
		}
		for _, e := range ents {
			p := path.Join(dir, e.Name())
			switch {
			case e.IsDir():
				m[p] = "dir"
				if err := walk(p); err != nil {
					return err
				}
			case e.Type()&fs.ModeSymlink != 0:
				target, err := v.Readlink(p)
				if err != nil {
					return err
				}
				m[p] = "-> " + target
			default:
				b, err := v.ReadFile(p)
				if err != nil {
					return fmt.Errorf("%s: %w", p, err)
				}
				m[p] = string(b)
			}
			if e.Type()&fs.ModeSymlink == 0 {
				names, err := v.ListXattr(p)
				if err != nil {
					return err
				}
				for _, x := range names {
					val, err := v.GetXattr(p, x)
					if err != nil {
						return err
					}
					m[p+" @"+x] = string(val)
				}
			}
		}
		return nil
	}
	return m, walk("")
}

func equalPlain(a, b map[string]string) bool { return diffPlain(a, b) == "" }

func diffPlain(got, want map[string]string) string {
	var d []string
	for k, w := range want {
		if g, ok := got[k]; !ok {
			d = append(d, "missing "+k)
		} else if g != w {
			d = append(d, fmt.Sprintf("%s differs (%d bytes, want %d)", k, len(g), len(w)))
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			d = append(d, "extra "+k)
		}
	}
	slices.Sort(d)
	return strings.Join(d, "; ")
}

// replayUpgrade materializes every crash state of rec (each point, with
// every pending write kept, none, or all but one) and checks each with
// checkUpgradeState; some state must have been refused as half-upgraded,
// or the replay did not cover what (the step under test).
func replayUpgrade(t *testing.T, rec *crashsim.Recorder, pw []byte, want map[string]string, what string) {
	t.Helper()
	scratch := t.TempDir()
	n := rec.Len()
	states, refused := 0, 0
	for k := 0; k <= n; k++ {
		sets := []func(int) bool{func(int) bool { return true }, func(int) bool { return false }}
		for _, i := range rec.Pending(k) {
			sets = append(sets, func(j int) bool { return j != i })
		}
		for si, keep := range sets {
			st, err := rec.StateAt(k, keep)
			if err != nil {
				t.Fatal(err)
			}
			os.RemoveAll(scratch)
			mustV(os.Mkdir(scratch, 0o700))
			if err := st.Materialize(scratch); err != nil {
				t.Fatal(err)
			}
			states++
			wasRefused, err := checkUpgradeState(t, scratch, pw, want)
			if err != nil {
				t.Fatalf("crash at %d/%d (keep set %d): %v", k, n, si, err)
			}
			if wasRefused {
				refused++
			}
		}
	}
	t.Logf("%d ops, %d crash states: %d refused as half-upgraded and finished by a second upgrade, all read the same plaintext", n, states, refused)
	if refused == 0 {
		t.Errorf("no crash state was half-upgraded: the replay did not cover the %s", what)
	}
}
