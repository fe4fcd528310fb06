package vault

import (
	"bytes"
	"crypto/rand"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"filippo.io/age"
	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/crashsim"
	"github.com/encryptfs/encryptfs/internal/crypto/bind"
	"github.com/encryptfs/encryptfs/internal/crypto/kdf"
	"github.com/encryptfs/encryptfs/internal/keyslot"
	"github.com/encryptfs/encryptfs/internal/session"
)

var epochVaultID = bytes.Repeat([]byte{0x3c}, bind.IDSize)

func cheapKDFParams(t *testing.T) kdf.Params {
	t.Helper()
	k, err := kdf.Cheapest(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func pwCred(pw string) keyslot.Credentials {
	return keyslot.Credentials{Password: func() ([]byte, error) { return []byte(pw), nil }}
}

// openBound opens the bound vault in dir with cr (nil Vault and the error
// if it does not open).
func openBound(t *testing.T, dir string, cr keyslot.Credentials) (*Vault, error) {
	t.Helper()
	s, err := session.OpenWith(dir, cr, session.Options{BoundVaultID: epochVaultID})
	if err != nil {
		return nil, err
	}
	v, err := FromSession(s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close() })
	return v, nil
}

func mustOpenBound(t *testing.T, dir string, cr keyslot.Credentials) *Vault {
	t.Helper()
	v, err := openBound(t, dir, cr)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// copyTree copies the vault directory src to a new directory (cp -a).
func copyTree(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "copy")
	if out, err := exec.Command("cp", "-a", src, dst).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v: %s", err, out)
	}
	return dst
}

// TestRevokeOldKeyLosesNewData is issue 7's "done when": after a revoke,
// an attacker who kept the old config and the old password still opens
// the vault (and reads what existed), but not a file created after the
// revoke, nor the names in a directory created after it; the new
// password reads everything, old and new; the age slot was carried over
// without its identity, and the old password no longer opens the new
// config.
func TestRevokeOldKeyLosesNewData(t *testing.T) {
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	s, master, err := session.CreateWith(dir, []keyslot.NewSlot{
		{Type: config.SlotPassword, Label: "pw", Password: []byte("old"), KDF: cheapKDFParams(t)},
		{Type: config.SlotAge, Label: "laptop", Recipient: id.Recipient().String()},
	}, session.CreateOptions{Params: config.NewParamsV2("aes-256-gcm", 16<<10), Options: session.Options{BoundVaultID: epochVaultID}})
	if err != nil {
		t.Fatal(err)
	}
	clear(master)
	v, err := FromSession(s)
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, v, "old.txt", "before the revoke")
	if err := v.Mkdir("olddir", 0o700); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, v, "olddir/a", "old a")
	mustWrite(t, v, "rewritten.txt", "old version")
	v.Close()
	kept, err := os.ReadFile(filepath.Join(dir, config.FileName)) // the attacker's copy
	if err != nil {
		t.Fatal(err)
	}

	s, err = session.OpenWith(dir, pwCred("old"), session.Options{BoundVaultID: epochVaultID})
	if err != nil {
		t.Fatal(err)
	}
	e, err := s.Revoke(keyslot.RevokeSpec{PasswordSlot: 1, NewPassword: []byte("new"), KDF: cheapKDFParams(t)})
	s.Close()
	if err != nil || e != 1 {
		t.Fatalf("Revoke = %d, %v", e, err)
	}

	v = mustOpenBound(t, dir, pwCred("new"))
	mustWrite(t, v, "new.txt", "after the revoke")
	if err := v.Mkdir("newdir", 0o700); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, v, "newdir/secret-name", "b")
	mustWrite(t, v, "olddir/c", "new c in an old directory")
	mustWrite(t, v, "rewritten.txt", "new version") // O_TRUNC: the file moves to the new epoch
	v.Close()

	// The attacker: the vault as it is now, with the config kept from
	// before the revoke, and the old password.
	atk := copyTree(t, dir)
	if err := os.Chmod(filepath.Join(atk, config.FileName), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(atk, config.FileName), kept, 0o400); err != nil {
		t.Fatal(err)
	}
	av := mustOpenBound(t, atk, pwCred("old"))
	mustRead(t, av, "old.txt", "before the revoke")
	mustRead(t, av, "olddir/a", "old a")
	if got, err := av.ReadFile("new.txt"); err == nil || !errors.Is(err, ErrCorrupt) {
		t.Fatalf("old key read a file made after the revoke: %q, %v", got, err)
	}
	if ents, err := av.ReadDir("newdir"); err == nil {
		t.Fatalf("old key listed a directory made after the revoke: %v", ents)
	}
	if got, err := av.ReadFile("olddir/c"); err == nil {
		t.Fatalf("old key read a file made after the revoke in an old directory: %q", got)
	}
	if got, err := av.ReadFile("rewritten.txt"); err == nil {
		t.Fatalf("old key read a file rewritten (truncated to 0) after the revoke: %q", got)
	}

	// The new password reads everything; the age slot was re-wrapped to
	// its recipient; the old password does not open the new config.
	for _, cr := range []keyslot.Credentials{pwCred("new"), {Identities: []age.Identity{id}}} {
		nv := mustOpenBound(t, dir, cr)
		mustRead(t, nv, "old.txt", "before the revoke")
		mustRead(t, nv, "olddir/a", "old a")
		mustRead(t, nv, "new.txt", "after the revoke")
		mustRead(t, nv, "newdir/secret-name", "b")
		mustRead(t, nv, "olddir/c", "new c in an old directory")
		mustRead(t, nv, "rewritten.txt", "new version")
		nv.Close()
	}
	if _, err := openBound(t, dir, pwCred("old")); !errors.Is(err, config.ErrWrongPassword) {
		t.Fatalf("old password on the new config: %v", err)
	}
}

// TestRewriteEpochCrash: rewriting a file of an older epoch in place
// (O_TRUNC, write, fsync) moves it to the current epoch; a crash at any
// point, with the writes not yet durable lost or kept (all, none, mixed
// subsets), leaves a file that reads as the old contents, empty or the
// new contents, or fails only in the one new chunk not yet fsynced (§13):
// the cut to the header is durable before the header of the new epoch is
// written (fileengine/epoch.go), so old chunks never sit under a new-epoch
// header. internal/crashsim replays it.
func TestRewriteEpochCrash(t *testing.T) {
	dir := t.TempDir()
	so := session.Options{BoundVaultID: epochVaultID}
	s, master, err := session.CreateWith(dir, []keyslot.NewSlot{
		{Type: config.SlotKeyfile, Label: "k", Keyfile: []byte("epoch crash test keyfile bytes")},
	}, session.CreateOptions{Params: config.NewParamsV2("aes-256-gcm", 4<<10), Options: so})
	if err != nil {
		t.Fatal(err)
	}
	clear(master)
	cr := keyslot.Credentials{Keyfiles: [][]byte{[]byte("epoch crash test keyfile bytes")}}
	old := string(bytes.Repeat([]byte("old "), 3000)) // three chunks
	v, err := FromSession(s)
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, v, "f", old)
	v.Close()
	s, err = session.OpenWith(dir, cr, so)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Revoke(keyslot.RevokeSpec{Keyfiles: cr.Keyfiles}); err != nil {
		t.Fatal(err)
	}
	s.Close()

	rec, err := crashsim.NewRecorder(dir)
	if err != nil {
		t.Fatal(err)
	}
	so.Backing = backing.NewFS(rec)
	s, err = session.OpenWith(dir, cr, so)
	if err != nil {
		t.Fatal(err)
	}
	v, err = FromSession(s)
	if err != nil {
		t.Fatal(err)
	}
	f, err := v.OpenFile("f", os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("new")); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	v.Close()
	if err := rec.Err(); err != nil {
		t.Fatal(err)
	}
	so.Backing = nil
	seen := map[string]bool{}
	for k := 0; k <= rec.Len(); k++ {
		// Of the writes not yet durable: none, all, and 14 mixed subsets.
		for keepAll := range 16 {
			st, err := rec.StateAt(k, func(op int) bool {
				return keepAll == 1 || keepAll > 1 && (op*2654435761+keepAll*40503)>>9&1 == 1
			})
			if err != nil {
				t.Fatal(err)
			}
			sdir := t.TempDir()
			if err := st.Materialize(sdir); err != nil {
				t.Fatal(err)
			}
			v := mustOpenBound(t, sdir, cr)
			got, err := v.ReadFile("f")
			if err != nil {
				// The new chunk durable before the header it is
				// sealed for: §13 allows a size-changing write not
				// yet fsynced to fail in the chunk it wrote, and
				// nothing more (never the old chunks under a new
				// header, never a bad header).
				fi, serr := v.Stat("f")
				if !errors.Is(err, ErrCorrupt) || serr != nil || fi.Size() != 3 {
					t.Fatalf("crash at %d (subset %d): %v (stat %v %v)", k, keepAll, err, fi, serr)
				}
				got = []byte("bad new chunk")
			} else if string(got) != old && string(got) != "" && string(got) != "new" {
				t.Fatalf("crash at %d (subset %d): %d bytes", k, keepAll, len(got))
			}
			seen[string(got)] = true
			v.Close()
		}
	}
	if !seen["new"] || !seen[old] {
		t.Fatalf("crash states did not see both the old and the new contents: %d states", len(seen))
	}
}

// TestEpochFieldsAuthenticated: the storage cannot move an object to an
// older epoch. A directory ID file whose epoch is set back from 1 to 0
// fails its binding check (its bindings are under its epoch's binding
// key), so nothing is listed in it or written into it under K_0's names
// key; a file header whose epoch is set back fails its MAC.
func TestEpochFieldsAuthenticated(t *testing.T) {
	dir := t.TempDir()
	so := session.Options{BoundVaultID: epochVaultID}
	kf := []byte("epoch fields test keyfile bytes")
	cr := keyslot.Credentials{Keyfiles: [][]byte{kf}}
	s, master, err := session.CreateWith(dir, []keyslot.NewSlot{{Type: config.SlotKeyfile, Label: "k", Keyfile: kf}},
		session.CreateOptions{Params: config.NewParamsV2("aes-256-gcm", 4<<10), Options: so})
	if err != nil {
		t.Fatal(err)
	}
	clear(master)
	if _, err := s.Revoke(keyslot.RevokeSpec{Keyfiles: cr.Keyfiles}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	v := mustOpenBound(t, dir, cr)
	if err := v.Mkdir("d", 0o700); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, v, "d/x", "in d")
	mustWrite(t, v, "f", "file")
	v.Close()

	var dirids, headers []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil || len(b) < 8 || b[0] != 0 || b[1] != 2 {
			return err
		}
		if filepath.Base(p) == "encryptfs.dirid" && b[5] == 1 {
			dirids = append(dirids, p)
		} else if len(b) >= 128 && b[7] == 1 {
			headers = append(headers, p)
		}
		return nil
	})
	if len(dirids) != 1 || len(headers) != 2 {
		t.Fatalf("found %d epoch-1 directory ID files and %d file headers, want 1 and 2", len(dirids), len(headers))
	}
	setEpoch0 := func(p string, off int) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		b[off+3] = 0
		os.Chmod(p, 0o600)
		if err := os.WriteFile(p, b, 0o400); err != nil {
			t.Fatal(err)
		}
	}
	setEpoch0(dirids[0], 2)
	for _, h := range headers {
		setEpoch0(h, 4)
	}
	v = mustOpenBound(t, dir, cr)
	if ents, err := v.ReadDir("d"); err == nil {
		t.Fatalf("a directory set back to epoch 0 was listed: %v", ents)
	}
	if err := v.WriteFile("d/planted", []byte("under K_0?"), 0o600); err == nil {
		t.Fatal("a file was written into a directory set back to epoch 0")
	}
	if got, err := v.ReadFile("f"); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a file header set back to epoch 0: %q, %v", got, err)
	}
}
