package vault

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	mathrand "math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"filippo.io/age"
	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/crypto/kdf"
	"github.com/encryptfs/encryptfs/internal/fresh"
	"github.com/encryptfs/encryptfs/internal/fsck"
	"github.com/encryptfs/encryptfs/internal/keyslot"
	"github.com/encryptfs/encryptfs/internal/session"
	"golang.org/x/sys/unix"
)

// The committed example vault of the full format 2 (issue 7):
// v2-full-aes-256-gcm has every feature `encryptfs init` turns on
// (BoundLocations §14, FileRoots §16, Freshness §15) and master-key epochs
// (§3b, KeyEpochs): it was made at epoch 0, revoked once (passwd --revoke,
// the keyfile and age slots carried over), and written again at epoch 1.
// It must stay readable, with every feature on, forever after. Made by
// this test with ENCRYPTFS_REGENERATE_V2_FULL_EXAMPLE=1; do not
// regenerate it (a change to the format is a new version with its own
// example vault).

const (
	exampleV2FullDir      = "v2-full-aes-256-gcm"
	exampleV2FullCreds    = "v2-full-credentials"
	exampleV2FullPassword = "encryptfs example v2 full"
	// exampleV2FullOldPassword opened slot 1 at epoch 0, before the
	// revoke; it no longer opens the vault.
	exampleV2FullOldPassword = "encryptfs example v2 full, epoch 0"
	// exampleV2FullID is the VaultID its config holds.
	exampleV2FullID = "f0117a0170f0117a0170f0117a0170f0"
)

// exampleV2FullFiles are written at epoch 1, after the revoke (the
// exampleFiles and exampleLink are of epoch 0).
var exampleV2FullFiles = map[string][]byte{
	"dir/after-revoke.txt":               []byte("written at epoch 1 in a directory of epoch 0\n"),
	"epoch1/new.txt":                     []byte("written at epoch 1\n"),
	"epoch1/" + strings.Repeat("N", 240): []byte("a long name of epoch 1\n"),
	// 257 chunks: two tag-block groups (§16).
	"epoch1/groups.bin": exampleContent(256*4096 + 100),
	"epoch1/xattr.txt":  []byte("has xattrs\n"),
}

// The sparse file: exampleV2FullSparseHead at 0, exampleV2FullSparseTail
// at exampleV2FullSparseAt, a hole between (chunks 1 to 4 never written).
const (
	exampleV2FullSparse     = "epoch1/sparse.bin"
	exampleV2FullSparseHead = "start of a sparse file"
	exampleV2FullSparseTail = "end of a sparse file\n"
	exampleV2FullSparseAt   = 5*4096 + 17
)

func exampleV2FullSparseContent() []byte {
	b := make([]byte, exampleV2FullSparseAt+len(exampleV2FullSparseTail))
	copy(b, exampleV2FullSparseHead)
	copy(b[exampleV2FullSparseAt:], exampleV2FullSparseTail)
	return b
}

// The hard-linked file (epoch 1): four names, two directories, so its
// names beyond the header's two are in a links file (§14).
var exampleV2FullLinks = []string{"links/a", "links/b", "links/c", "epoch1/link-d"}

const exampleV2FullLinked = "one file, four names\n"

// The xattrs (names and values under K_0's keys, §3b).
var exampleV2FullXattrs = []struct{ name, attr, value string }{
	{"epoch1/xattr.txt", "user.comment", "encryptfs example"},
	{"epoch1/xattr.txt", "user.color", "green"},
	{"epoch1", "user.dir", "a directory's xattr"},
}

// The symlink of epoch 1 (exampleLink is of epoch 0).
const exampleV2FullSymlink, exampleV2FullSymTarget = "epoch1/sym", "groups.bin"

func exampleV2FullCred(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(examplePath(exampleV2FullCreds), name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// exampleV2FullDoors are the credentials that open it (each a key slot).
func exampleV2FullDoors(t *testing.T) []struct {
	name string
	cr   keyslot.Credentials
} {
	ids, err := keyslot.ParseIdentities(exampleV2FullCred(t, "age-identity.txt"), keyslot.IdentityOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pw := string(bytes.TrimSpace(exampleV2FullCred(t, "password")))
	return []struct {
		name string
		cr   keyslot.Credentials
	}{
		{"password", pwCred(pw)},
		{"keyfile", keyslot.Credentials{Keyfiles: [][]byte{exampleV2FullCred(t, "keyfile")}}},
		{"age", keyslot.Credentials{Identities: []age.Identity{ids[0]}}},
	}
}

// openExampleV2Full opens dir with cr; freshness state (if any is
// recorded) goes to state.
func openExampleV2Full(t *testing.T, dir string, cr keyslot.Credentials, state string, use session.FreshnessUse) *Vault {
	t.Helper()
	s, err := session.OpenWith(dir, cr, session.Options{FreshnessUse: use, FreshnessStateDir: state})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	v, err := FromSession(s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestExampleVaultV2Full(t *testing.T) {
	if os.Getenv("ENCRYPTFS_REGENERATE_V2_FULL_EXAMPLE") == "1" {
		regenerateExampleV2Full(t)
	}
	before, err := os.ReadFile(filepath.Join(examplePath(exampleV2FullDir), config.FileName))
	if err != nil {
		t.Fatal(err)
	}
	c, err := config.Parse(before)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{config.FlagBoundLocations, config.FlagFileRoots, config.FlagFreshness, config.FlagKeyEpochs} {
		if !c.Params.Has(f) {
			t.Errorf("the example's config lacks feature %s", f)
		}
	}
	if hex.EncodeToString(c.Params.VaultID) != exampleV2FullID {
		t.Errorf("VaultID %x", c.Params.VaultID)
	}
	// Everything below works on a copy: opening a format-2 vault with
	// freshness may write (a writer records), the committed one stays.
	dir := exampleV2FullCopy(t)
	for _, d := range exampleV2FullDoors(t) {
		t.Run(d.name, func(t *testing.T) {
			v := openExampleV2Full(t, dir, d.cr, t.TempDir(), session.FreshnessCheck)
			defer v.Close()
			if !v.sess.Tree().Bound() || !v.sess.Engine().Bound() {
				t.Fatal("the session does not bind locations")
			}
			checkExampleV2FullContent(t, v)
		})
	}
	if _, err := session.OpenWith(dir, pwCred(exampleV2FullOldPassword), session.Options{FreshnessUse: session.FreshnessOff}); !errors.Is(err, config.ErrWrongPassword) {
		t.Errorf("the password of epoch 0 after the revoke: %v", err)
	}
	cr := exampleV2FullDoors(t)[0].cr
	t.Run("epochs", func(t *testing.T) { checkExampleV2FullEpochs(t, dir, cr) })
	t.Run("fsck", func(t *testing.T) {
		s, err := session.OpenWith(dir, cr, session.Options{FreshnessUse: session.FreshnessCheck, FreshnessStateDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		rep, err := fsck.Check(context.Background(), s, fsck.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Problems) != 0 {
			t.Fatalf("fsck of the example: %v", rep.Problems)
		}
	})
	t.Run("freshness", func(t *testing.T) { checkExampleV2FullFreshness(t, dir, cr) })
	t.Run("binding", func(t *testing.T) { checkExampleV2FullBinding(t, dir, cr) })
	t.Run("roots", func(t *testing.T) { checkExampleV2FullRoots(t, dir, cr) })
	after, _ := os.ReadFile(filepath.Join(examplePath(exampleV2FullDir), config.FileName))
	if !bytes.Equal(before, after) {
		t.Fatal("the committed config changed")
	}
}

// exampleV2FullExtras is what git does not keep of the vault, in a file
// beside it: which backing files are hard links of one file, and the
// backing files' xattrs (the vault's encrypted xattrs, §14).
const exampleV2FullExtras = "v2-full-aes-256-gcm.extras"

// exampleV2FullCopy copies the committed vault and restores its extras
// (hard links and xattrs).
func exampleV2FullCopy(t *testing.T) string {
	t.Helper()
	dir := copyTree(t, examplePath(exampleV2FullDir))
	b, err := os.ReadFile(examplePath(exampleV2FullExtras))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 0 || strings.HasPrefix(f[0], "#"):
		case f[0] == "link" && len(f) == 3:
			p, of := filepath.Join(dir, f[1]), filepath.Join(dir, f[2])
			want, err1 := os.ReadFile(of)
			got, err2 := os.ReadFile(p)
			if err := errors.Join(err1, err2); err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%s is not a copy of %s: %v", f[1], f[2], err)
			}
			if err := errors.Join(os.Remove(p), os.Link(of, p)); err != nil {
				t.Fatal(err)
			}
		case f[0] == "xattr" && len(f) == 4:
			val, err := hex.DecodeString(f[3])
			if err != nil {
				t.Fatal(err)
			}
			if err := unix.Lsetxattr(filepath.Join(dir, f[1]), f[2], val, 0); err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("%s: bad line %q", exampleV2FullExtras, line)
		}
	}
	return dir
}

// writeExampleV2FullExtras writes the extras file of the vault in dir.
func writeExampleV2FullExtras(t *testing.T, dir string) {
	t.Helper()
	out := []string{
		"# What git does not keep of v2-full-aes-256-gcm (README.md): restore it",
		"# in a checkout before use. Paths are relative to the vault directory.",
		"# link PATH OF: PATH is a hard link of OF (remove PATH, ln OF PATH)",
		"# xattr PATH NAME VALUE-HEX: setfattr -n NAME -v 0xVALUE-HEX PATH",
	}
	inodes := map[uint64]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		if d.Type().IsRegular() && st.Nlink > 1 {
			if of, ok := inodes[st.Ino]; ok {
				out = append(out, "link "+rel+" "+of)
			} else {
				inodes[st.Ino] = rel
			}
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		buf := make([]byte, 64<<10)
		n, err := unix.Llistxattr(p, buf)
		if err != nil {
			return err
		}
		for _, name := range strings.Split(string(buf[:n]), "\x00") {
			if name == "" {
				continue
			}
			val := make([]byte, 64<<10)
			m, err := unix.Lgetxattr(p, name, val)
			if err != nil {
				return err
			}
			out = append(out, "xattr "+rel+" "+name+" "+hex.EncodeToString(val[:m]))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(examplePath(exampleV2FullExtras), []byte(strings.Join(out, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func checkExampleV2FullContent(t *testing.T, v *Vault) {
	t.Helper()
	checkExampleContent(t, v) // epoch 0: the files of every example vault
	for name, want := range exampleV2FullFiles {
		got, err := v.ReadFile(name)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: %v (got %d bytes, want %d)", name, err, len(got), len(want))
		}
	}
	if got, err := v.ReadFile(exampleV2FullSparse); err != nil || !bytes.Equal(got, exampleV2FullSparseContent()) {
		t.Errorf("sparse: %v (got %d bytes)", err, len(got))
	}
	for _, name := range exampleV2FullLinks {
		got, err := v.ReadFile(name)
		if err != nil || string(got) != exampleV2FullLinked {
			t.Errorf("%s: %q, %v", name, got, err)
		}
		fi, err := v.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		if n := fi.Sys().(*unix.Stat_t).Nlink; n != uint64(len(exampleV2FullLinks)) {
			t.Errorf("%s: %d links, want %d", name, n, len(exampleV2FullLinks))
		}
	}
	for _, x := range exampleV2FullXattrs {
		if got, err := v.GetXattr(x.name, x.attr); err != nil || string(got) != x.value {
			t.Errorf("xattr %s %s: %q, %v", x.name, x.attr, got, err)
		}
	}
	if names, err := v.ListXattr("epoch1/xattr.txt"); err != nil || len(names) != 2 {
		t.Errorf("ListXattr: %v, %v", names, err)
	}
	if target, err := v.Readlink(exampleV2FullSymlink); err != nil || target != exampleV2FullSymTarget {
		t.Errorf("symlink: %q, %v", target, err)
	}
	if ents, err := v.ReadDir("epoch1"); err != nil || len(ents) != 7 {
		t.Errorf("ReadDir epoch1: %d entries, %v", len(ents), err)
	}
}

// headerEpoch is the epoch field of a v2 file header (offset 4,
// big-endian, §3b) of the backing file of name.
func headerEpoch(t *testing.T, v *Vault, dir, name string) uint32 {
	t.Helper()
	b, err := os.ReadFile(backingOf(t, v, dir, name))
	if err != nil || len(b) < 128 {
		t.Fatalf("%s: %d bytes, %v", name, len(b), err)
	}
	return binary.BigEndian.Uint32(b[4:8])
}

// checkExampleV2FullEpochs: files of both epochs are there, and read.
func checkExampleV2FullEpochs(t *testing.T, dir string, cr keyslot.Credentials) {
	v := openExampleV2Full(t, dir, cr, t.TempDir(), session.FreshnessOff)
	defer v.Close()
	want := map[string]uint32{"hello.txt": 0, "multi.bin": 0, "dir/sub/nested.txt": 0,
		"dir/after-revoke.txt": 1, "epoch1/new.txt": 1, "epoch1/groups.bin": 1, exampleV2FullLinks[0]: 1}
	for name, e := range want {
		if got := headerEpoch(t, v, dir, name); got != e {
			t.Errorf("%s: header epoch %d, want %d", name, got, e)
		}
		if _, err := v.ReadFile(name); err != nil {
			t.Errorf("%s (epoch %d): %v", name, e, err)
		}
	}
}

// checkExampleV2FullFreshness: with a fresh local state, freshness status
// is clean (the manifests of the generator's device are there); a deleted
// backing file is then reported on its plaintext path.
func checkExampleV2FullFreshness(t *testing.T, dir string, cr keyslot.Credentials) {
	cp := copyTree(t, dir)
	status := func() *fresh.Report {
		t.Helper()
		s, err := session.OpenWith(cp, cr, session.Options{FreshnessUse: session.FreshnessCheck, FreshnessStateDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if s.Freshness() == nil {
			t.Fatal("no freshness on the example")
		}
		rep, err := s.Freshness().Check()
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	rep := status()
	if rep.NothingRecorded() {
		t.Fatal("the example has no freshness records")
	}
	wantOK(t, rep)
	v := openExampleV2Full(t, cp, cr, t.TempDir(), session.FreshnessOff)
	victim := backingOf(t, v, cp, "epoch1/new.txt")
	v.Close()
	if err := os.Remove(victim); err != nil {
		t.Fatal(err)
	}
	rep = status()
	if rep.Status == fresh.OK {
		t.Fatalf("a deleted file is not reported:\n%s", rep)
	}
	if !strings.Contains(rep.String(), "/epoch1/new.txt") {
		t.Fatalf("status does not name the deleted file:\n%s", rep)
	}
}

// checkExampleV2FullBinding: contents moved under another name read as
// corrupt (§14).
func checkExampleV2FullBinding(t *testing.T, dir string, cr keyslot.Credentials) {
	cp := copyTree(t, dir)
	v := openExampleV2Full(t, cp, cr, t.TempDir(), session.FreshnessOff)
	from, to := backingOf(t, v, cp, "epoch1/new.txt"), backingOf(t, v, cp, "chunk.bin")
	v.Close()
	if err := os.Rename(from, to); err != nil {
		t.Fatal(err)
	}
	v = openExampleV2Full(t, cp, cr, t.TempDir(), session.FreshnessOff)
	defer v.Close()
	if _, err := v.ReadFile("chunk.bin"); !errors.Is(err, ErrCorrupt) {
		t.Errorf("moved contents: %v, want ErrCorrupt", err)
	}
}

// checkExampleV2FullRoots: two chunks of a file swapped, and a file cut to
// its header, read as corrupt (§16: the chunks are authenticated as a
// whole, by the file root).
func checkExampleV2FullRoots(t *testing.T, dir string, cr keyslot.Credentials) {
	cp := copyTree(t, dir)
	v := openExampleV2Full(t, cp, cr, t.TempDir(), session.FreshnessOff)
	p := backingOf(t, v, cp, "multi.bin")
	v.Close()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	// CipherSize(n) = 128 + n + chunks·overhead + groups·4096 (§16).
	n, chunks := len(exampleFiles["multi.bin"]), 4
	overhead := (len(b) - 128 - n - 4096) / chunks
	cs := 4096 + overhead
	c1 := 128 + 4096 + cs
	one := append([]byte(nil), b[c1:c1+cs]...)
	copy(b[c1:], b[c1+cs:c1+2*cs])
	copy(b[c1+cs:], one)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	// What only the file root catches (§16): a file cut to its header
	// (without roots it reads as empty).
	v = openExampleV2Full(t, cp, cr, t.TempDir(), session.FreshnessOff)
	cut := backingOf(t, v, cp, "hello.txt")
	v.Close()
	if err := os.Truncate(cut, 128); err != nil {
		t.Fatal(err)
	}
	v = openExampleV2Full(t, cp, cr, t.TempDir(), session.FreshnessOff)
	defer v.Close()
	if _, err := v.ReadFile("multi.bin"); !errors.Is(err, ErrCorrupt) {
		t.Errorf("chunks 1 and 2 swapped: %v, want ErrCorrupt", err)
	}
	if got, err := v.ReadFile("hello.txt"); !errors.Is(err, ErrCorrupt) {
		t.Errorf("cut to its header: %q, %v, want ErrCorrupt", got, err)
	}
}

// exampleHardLink makes newName a hard link to oldName (the vault package
// has no Link; the FUSE layer's is tree.Link too, which engine.Dir.Link
// calls).
func exampleHardLink(t *testing.T, v *Vault, oldName, newName string) {
	t.Helper()
	from, err := v.resolve(oldName)
	if err != nil {
		t.Fatal(err)
	}
	defer from.release()
	to, err := v.resolve(newName)
	if err != nil {
		t.Fatal(err)
	}
	defer to.release()
	if err := from.parent.Link(from.name, to.parent, to.name); err != nil {
		t.Fatal(err)
	}
}

// regenerateExampleV2Full makes the vault as init does (the three
// features), writes the epoch-0 files, revokes (passwd --revoke), and
// writes the epoch-1 files, all from one device (one freshness state).
// Its randomness is a seeded ChaCha8, but for the age identity.
func regenerateExampleV2Full(t *testing.T) {
	dir, creds := examplePath(exampleV2FullDir), examplePath(exampleV2FullCreds)
	for _, d := range []string{dir, creds} {
		if err := os.RemoveAll(d); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	rng := mathrand.NewChaCha8([32]byte{'v', '2', 'f', 'u', 'l', 'l'})
	state := t.TempDir()
	opts := session.Options{Rand: rng, FreshnessStateDir: state}
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	keyfile := make([]byte, 32)
	io.ReadFull(rng, keyfile)
	k0, err := kdf.Cheapest(rng)
	if err != nil {
		t.Fatal(err)
	}
	vid, _ := hex.DecodeString(exampleV2FullID)
	p, err := config.NewParamsV2("aes-256-gcm", 4096).WithBoundLocations(vid)
	if err == nil {
		p, err = p.WithFeature(config.FlagFileRoots)
	}
	if err == nil {
		p, err = p.WithFeature(config.FlagFreshness)
	}
	if err != nil {
		t.Fatal(err)
	}
	s, master, err := session.CreateWith(dir, []keyslot.NewSlot{
		{Type: config.SlotPassword, Label: "password", Password: []byte(exampleV2FullOldPassword), KDF: k0},
		{Type: config.SlotKeyfile, Label: "keyfile", Keyfile: keyfile},
		{Type: config.SlotAge, Label: "age X25519", Recipient: id.Recipient().String()},
	}, session.CreateOptions{Params: p, Creator: "encryptfs example generator", Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	clear(master)
	s.Close()
	for name, data := range map[string][]byte{
		"password":         []byte(exampleV2FullPassword + "\n"),
		"keyfile":          keyfile,
		"age-identity.txt": []byte("# test only: the age identity of the v2-full example vault's slot 3\n" + id.String() + "\n"),
	} {
		if err := os.WriteFile(filepath.Join(creds, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	open := func(pw string) *Vault {
		s, err := session.OpenWith(dir, pwCred(pw), opts)
		if err != nil {
			t.Fatal(err)
		}
		v, err := FromSession(s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}

	// Epoch 0: the files of every example vault.
	v := open(exampleV2FullOldPassword)
	writeExampleContent(t, v)
	mustClose(t, v)

	// passwd --revoke: a new password; the keyfile and age slots carried.
	k1, err := kdf.Cheapest(rng)
	if err != nil {
		t.Fatal(err)
	}
	s, err = session.OpenWith(dir, pwCred(exampleV2FullOldPassword), opts)
	if err != nil {
		t.Fatal(err)
	}
	e, err := s.Revoke(keyslot.RevokeSpec{PasswordSlot: 1, NewPassword: []byte(exampleV2FullPassword), KDF: k1, Keyfiles: [][]byte{keyfile}})
	s.Close()
	if err != nil || e != 1 {
		t.Fatalf("Revoke = %d, %v", e, err)
	}

	// Epoch 1.
	v = open(exampleV2FullPassword)
	for _, d := range []string{"epoch1", "links"} {
		if err := v.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, data := range exampleV2FullFiles {
		if err := v.WriteFile(name, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := v.OpenFile(exampleV2FullSparse, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	_, err1 := f.WriteAt([]byte(exampleV2FullSparseHead), 0)
	_, err2 := f.WriteAt([]byte(exampleV2FullSparseTail), exampleV2FullSparseAt)
	if err := errors.Join(err1, err2, f.Close()); err != nil {
		t.Fatal(err)
	}
	if err := v.WriteFile(exampleV2FullLinks[0], []byte(exampleV2FullLinked), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, name := range exampleV2FullLinks[1:] {
		exampleHardLink(t, v, exampleV2FullLinks[0], name)
	}
	for _, x := range exampleV2FullXattrs {
		if err := v.SetXattr(x.name, x.attr, []byte(x.value)); err != nil {
			t.Fatal(err)
		}
	}
	if err := v.Symlink(exampleV2FullSymTarget, exampleV2FullSymlink); err != nil {
		t.Fatal(err)
	}
	mustClose(t, v)
	writeExampleV2FullExtras(t, dir)
	chmodExampleFiles(dir)
}
