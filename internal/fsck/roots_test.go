package fsck

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/encryptfs/encryptfs/internal/crypto/content"
	"github.com/encryptfs/encryptfs/vault"
)

// TestRootsDirtyReplayed: a header the file had while DIRTY, put back
// over the newer file, reads like v1 (every chunk authentic at its index),
// fsck reports dirty-root, and --repair recomputes the root so the file is
// clean and checked as a whole again. A chunk of an older version spliced
// into a clean file is reported as bad-root (every chunk authenticates
// under v1's rules: --repair would accept it, as v1 reads it).
func TestRootsDirtyReplayed(t *testing.T) {
	fx, bpath, older, plain, f := rewrittenFile(t)
	copy(plain[10:], "NEW")
	raw, _ := os.ReadFile(bpath)
	dirty := bytes.Clone(raw[:content.HeaderSizeV2])
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	clean, _ := os.ReadFile(bpath)

	check := func(wantKinds ...Kind) *Report {
		t.Helper()
		rep, err := Check(context.Background(), fx.session(t, nil), Options{})
		if err != nil {
			t.Fatal(err)
		}
		var got []Kind
		for _, p := range rep.Problems {
			got = append(got, p.Kind)
		}
		if len(got) != len(wantKinds) || (len(got) > 0 && got[0] != wantKinds[0]) {
			t.Fatalf("fsck found %v, want %v", got, wantKinds)
		}
		return rep
	}
	check()

	// The splice: chunk 0 of the older version in the newer file.
	spliced := bytes.Clone(clean)
	at := content.HeaderSizeV2 + content.TagBlockSize
	copy(spliced[at:at+chunk+32], older[at:]) // the whole stored chunk (AES-GCM: 16-byte nonce and tag)
	if err := os.WriteFile(bpath, spliced, 0o600); err != nil {
		t.Fatal(err)
	}
	check(KindBadRoot)

	// The DIRTY header put back over the newer file.
	replayed := bytes.Clone(clean)
	copy(replayed, dirty)
	if err := os.WriteFile(bpath, replayed, 0o600); err != nil {
		t.Fatal(err)
	}
	check(KindDirtyRoot)
	v2, err := vault.FromSession(fx.session(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := v2.ReadFile("f"); err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("DIRTY file reads %d bytes, %v", len(got), err)
	}
	rr, err := Repair(context.Background(), fx.session(t, nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rr.Fixes) != 1 || rr.Fixes[0].Kind != KindDirtyRoot || len(rr.Failed) > 0 || !rr.After.Clean {
		t.Fatalf("repair: fixes %v, failed %v, clean after %v", rr.Fixes, rr.Failed, rr.After.Clean)
	}
	check()
	// Clean again: the splice is caught again.
	repaired, _ := os.ReadFile(bpath)
	copy(repaired[at:at+chunk+32], older[at:])
	if err := os.WriteFile(bpath, repaired, 0o600); err != nil {
		t.Fatal(err)
	}
	check(KindBadRoot)
}

// TestRootsBadRootPowerLoss: the clean header of a close (not fsynced)
// kept by a power loss that lost the chunk and tag-block writes before
// it: the mount's reads fail (root), fsck reports bad-root, and --repair
// re-roots the file because every chunk authenticates under v1's rules;
// it then reads the old chunks. The same state with a chunk that does not
// authenticate is reported and left alone (bad-root and bad-chunk).
func TestRootsBadRootPowerLoss(t *testing.T) {
	for _, damaged := range []bool{false, true} {
		fx, bpath, older, plain, f := rewrittenFile(t)
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		newer, _ := os.ReadFile(bpath)
		state := bytes.Clone(older)
		copy(state, newer[:content.HeaderSizeV2]) // the clean header survived, not the data
		if damaged {
			state[len(state)-20] ^= 1
		}
		if err := os.WriteFile(bpath, state, 0o600); err != nil {
			t.Fatal(err)
		}
		v2, err := vault.FromSession(fx.session(t, nil))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := v2.ReadFile("f"); !errors.Is(err, content.ErrBadRoot) {
			t.Fatalf("damaged %v: read: %v, want ErrBadRoot", damaged, err)
		}
		before, err := Check(context.Background(), fx.session(t, nil), Options{})
		if err != nil {
			t.Fatal(err)
		}
		rr, err := Repair(context.Background(), fx.session(t, nil), nil)
		if err != nil {
			t.Fatal(err)
		}
		kinds := func(ps []Problem) (ks []Kind) {
			for _, p := range ps {
				ks = append(ks, p.Kind)
			}
			return ks
		}
		if !slices.Contains(kinds(before.Problems), KindBadRoot) {
			t.Fatalf("damaged %v: fsck found %v, want bad-root", damaged, kinds(before.Problems))
		}
		if damaged {
			if len(rr.Fixes) != 0 || !slices.Contains(kinds(rr.After.Problems), KindBadRoot) || !slices.Contains(kinds(rr.After.Problems), KindChunk) {
				t.Fatalf("damaged: fixes %v, after %v: a file whose chunks do not authenticate must not be re-rooted", rr.Fixes, kinds(rr.After.Problems))
			}
			continue
		}
		if len(rr.Fixes) != 1 || rr.Fixes[0].Kind != KindBadRoot || len(rr.Failed) > 0 || !rr.After.Clean {
			t.Fatalf("repair: fixes %v, failed %v, after %v", rr.Fixes, rr.Failed, kinds(rr.After.Problems))
		}
		v3, err := vault.FromSession(fx.session(t, nil))
		if err != nil {
			t.Fatal(err)
		}
		if got, err := v3.ReadFile("f"); err != nil || !bytes.Equal(got, plain) {
			t.Fatalf("re-rooted file reads %d bytes, %v; want the old chunks", len(got), err)
		}
	}
}

// rewrittenFile writes "f" (three chunks and some) into a fixture with
// file roots, opens it and writes "NEW" at offset 10 without closing it:
// the file is DIRTY. It returns the backing file's path, its bytes before
// the rewrite, the plaintext after it and the open file.
func rewrittenFile(t *testing.T) (fx *boundFixture, bpath string, older, plain []byte, f *vault.File) {
	t.Helper()
	fx, v := newBoundFixtureWith(t, nil, true)
	plain = bytes.Repeat([]byte("0123456789abcdef"), 3*chunk/16+5)
	if err := v.WriteFile("f", plain, 0o644); err != nil {
		t.Fatal(err)
	}
	rel, err := v.EncryptPath("f")
	if err != nil {
		t.Fatal(err)
	}
	bpath = filepath.Join(fx.dir, rel)
	older, _ = os.ReadFile(bpath)
	f, err = v.OpenFile("f", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("NEW"), 10); err != nil {
		t.Fatal(err)
	}
	return fx, bpath, older, plain, f
}
