package fsck

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/encryptfs/encryptfs/internal/crypto/meta"
	"github.com/encryptfs/encryptfs/internal/crypto/names"
	"golang.org/x/sys/unix"
)

func TestCleanVault(t *testing.T) {
	fx := newFixture(t)
	before := snapshot(t, fx.dir)
	var calls int
	rep := fx.check(t, Options{Progress: func(Progress) { calls++ }})
	if !rep.Clean || len(rep.Problems) != 0 {
		t.Fatalf("clean vault reported problems: %+v", rep.Problems)
	}
	s := rep.Summary
	// Files: small, big, sparse, empty, long name, dir/other, dir/sub/file.
	if s.Dirs != 3 || s.Files != 7 || s.Symlinks != 2 || s.Xattrs != 2 {
		t.Errorf("summary %+v", s)
	}
	var total int64
	for _, d := range fx.files {
		total += int64(len(d))
	}
	if s.PlainBytes != total {
		t.Errorf("PlainBytes %d, want %d", s.PlainBytes, total)
	}
	if calls < 2 {
		t.Errorf("progress called %d times", calls)
	}
	if after := snapshot(t, fx.dir); !equalMaps(before, after) {
		t.Error("fsck changed the vault")
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// corruption is one way of damaging the fixture and what fsck must say.
type corruption struct {
	name    string
	damage  func(t *testing.T, fx *fixture) // returns nothing; sets up the damage
	want    func(t *testing.T, fx *fixture) []problemKey
	ranges  map[string][]Range // plaintext path -> the bad-chunk ranges expected
	salvage map[string][]Range // plaintext path -> ranges expected to be zeros in the salvage copy (nil: identical)
	missing []string           // plaintext paths that must not be in the salvage copy
	// size overrides the expected salvaged size of a file.
	size map[string]int
	// detail, if set, must appear in some problem's Detail.
	detail string
}

// corruptions lists every kind of damage the tests apply.
func corruptions() []corruption {
	one := func(kind Kind, plainPath string, known bool) func(*testing.T, *fixture) []problemKey {
		return func(t *testing.T, fx *fixture) []problemKey {
			pp := ""
			if known {
				pp = plainPath
			}
			return []problemKey{{kind, fx.backingPath(t, plainPath), pp}}
		}
	}
	return []corruption{
		{
			name:    "flip chunk byte",
			damage:  func(t *testing.T, fx *fixture) { flipByte(t, fx.abs(t, pBig), cipherChunkOff(2)+100) },
			want:    one(KindChunk, pBig, true),
			ranges:  map[string][]Range{pBig: {{2 * chunk, 3 * chunk}}},
			salvage: map[string][]Range{pBig: {{2 * chunk, 3 * chunk}}},
		},
		{
			name:    "flip last partial chunk",
			damage:  func(t *testing.T, fx *fixture) { flipByte(t, fx.abs(t, pBig), cipherChunkOff(5)+20) },
			want:    one(KindChunk, pBig, true),
			ranges:  map[string][]Range{pBig: {{5 * chunk, bigSize}}},
			salvage: map[string][]Range{pBig: {{5 * chunk, bigSize}}},
		},
		{
			name: "truncate at chunk boundary",
			damage: func(t *testing.T, fx *fixture) {
				if err := os.Truncate(fx.abs(t, pBig), cipherChunkOff(3)); err != nil {
					t.Fatal(err)
				}
			},
			want:   one(KindTruncated, pBig, true),
			size:   map[string]int{pBig: 3 * chunk},
			detail: "cut at a chunk boundary",
		},
		{
			name: "truncate inside a tag",
			damage: func(t *testing.T, fx *fixture) {
				if err := os.Truncate(fx.abs(t, pBig), cipherChunkOff(3)+20); err != nil {
					t.Fatal(err)
				}
			},
			want: func(t *testing.T, fx *fixture) []problemKey {
				b := fx.backingPath(t, pBig)
				return []problemKey{{KindSize, b, pBig}, {KindTruncated, b, pBig}}
			},
			size: map[string]int{pBig: 3 * chunk},
		},
		{
			name: "zero a chunk in a non-sparse file",
			damage: func(t *testing.T, fx *fixture) {
				writeAt(t, fx.abs(t, pBig), make([]byte, chunk+32), cipherChunkOff(1))
			},
			want:    one(KindChunk, pBig, true),
			ranges:  map[string][]Range{pBig: {{chunk, 2 * chunk}}},
			salvage: map[string][]Range{pBig: {{chunk, 2 * chunk}}},
			detail:  "chunk 1 is all zero bytes",
		},
		{
			name: "swap chunks",
			damage: func(t *testing.T, fx *fixture) {
				p := fx.abs(t, pBig)
				data, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				c1 := bytes.Clone(data[cipherChunkOff(1):cipherChunkOff(2)])
				c3 := bytes.Clone(data[cipherChunkOff(3):cipherChunkOff(4)])
				writeAt(t, p, c3, cipherChunkOff(1))
				writeAt(t, p, c1, cipherChunkOff(3))
			},
			want:    one(KindChunk, pBig, true),
			ranges:  map[string][]Range{pBig: {{chunk, 2 * chunk}, {3 * chunk, 4 * chunk}}},
			salvage: map[string][]Range{pBig: {{chunk, 2 * chunk}, {3 * chunk, 4 * chunk}}},
		},
		{
			name:    "corrupt header",
			damage:  func(t *testing.T, fx *fixture) { flipByte(t, fx.abs(t, pBig), 10) },
			want:    one(KindHeader, pBig, true),
			missing: []string{pBig},
		},
		{
			name: "tamper a name",
			damage: func(t *testing.T, fx *fixture) {
				p := fx.abs(t, pSmall)
				b := []byte(filepath.Base(p))
				b[3] = otherChar(b[3])
				rename(t, p, filepath.Join(fx.dir, string(b)))
			},
			want: func(t *testing.T, fx *fixture) []problemKey {
				ents, _ := os.ReadDir(fx.dir)
				for _, e := range ents {
					if e.Name() != fx.backingPath(t, pBig) && similar(e.Name(), fx.backingPath(t, pSmall)) {
						return []problemKey{{KindBadName, e.Name(), ""}}
					}
				}
				t.Fatal("tampered entry not found")
				return nil
			},
			missing: []string{pSmall},
		},
		{
			name: "name moved to another directory",
			damage: func(t *testing.T, fx *fixture) {
				rename(t, fx.abs(t, pSmall), filepath.Join(fx.abs(t, pDir), fx.backingPath(t, pSmall)))
			},
			want: func(t *testing.T, fx *fixture) []problemKey {
				return []problemKey{{KindBadName, fx.backingPath(t, pDir) + "/" + fx.backingPath(t, pSmall), ""}}
			},
			missing: []string{pSmall},
		},
		{
			name: "foreign name",
			damage: func(t *testing.T, fx *fixture) {
				writeFile(t, filepath.Join(fx.dir, "notes.txt"), []byte("hello"))
			},
			want: func(t *testing.T, fx *fixture) []problemKey { return []problemKey{{KindForeign, "notes.txt", ""}} },
		},
		{
			name: "sync-conflict copy",
			damage: func(t *testing.T, fx *fixture) {
				data, err := os.ReadFile(fx.abs(t, pSmall))
				if err != nil {
					t.Fatal(err)
				}
				writeFile(t, fx.abs(t, pSmall)+".sync-conflict-20260101-120000-ABCDEFG", data)
			},
			want: func(t *testing.T, fx *fixture) []problemKey {
				return []problemKey{{KindConflict, fx.backingPath(t, pSmall) + ".sync-conflict-20260101-120000-ABCDEFG", pSmall + ".sync-conflict-20260101-120000-ABCDEFG"}}
			},
		},
		{
			name: "missing dirid",
			damage: func(t *testing.T, fx *fixture) {
				if err := os.Remove(filepath.Join(fx.abs(t, pSub), names.DirIDFile)); err != nil {
					t.Fatal(err)
				}
			},
			want: func(t *testing.T, fx *fixture) []problemKey {
				return []problemKey{{KindDirID, fx.backingPath(t, pSub) + "/" + names.DirIDFile, pSub}}
			},
			missing: []string{pSubFile},
		},
		{
			name: "bad long-name sidecar",
			damage: func(t *testing.T, fx *fixture) {
				p := fx.abs(t, "/"+longName) + names.LongNameSuffix
				side, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				c := byte('x')
				if side[5] == c {
					c = 'y'
				}
				writeAt(t, p, []byte{c}, 5)
			},
			want:    one(KindLongName, "/"+longName, false),
			missing: []string{"/" + longName},
		},
		{
			name: "missing long-name sidecar",
			damage: func(t *testing.T, fx *fixture) {
				if err := os.Remove(fx.abs(t, "/"+longName) + names.LongNameSuffix); err != nil {
					t.Fatal(err)
				}
			},
			want:    one(KindLongName, "/"+longName, false),
			missing: []string{"/" + longName},
		},
		{
			name: "orphan long-name sidecar",
			damage: func(t *testing.T, fx *fixture) {
				p := fx.abs(t, "/"+longName)
				rename(t, p, filepath.Join(fx.dir, "elsewhere"))
			},
			want: func(t *testing.T, fx *fixture) []problemKey {
				return []problemKey{
					{KindOrphanSidecar, fx.backingPath(t, "/"+longName) + names.LongNameSuffix, ""},
					{KindBadName, "elsewhere", ""},
				}
			},
			missing: []string{"/" + longName},
		},
		{
			name: "tampered symlink",
			damage: func(t *testing.T, fx *fixture) {
				p := fx.abs(t, pLink)
				tgt, err := os.Readlink(p)
				if err != nil {
					t.Fatal(err)
				}
				b := []byte(tgt)
				b[30] = otherChar(b[30])
				if err := os.Remove(p); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(string(b), p); err != nil {
					t.Fatal(err)
				}
			},
			want:    one(KindSymlink, pLink, true),
			missing: []string{pLink},
		},
		{
			name: "tampered long symlink sidecar",
			damage: func(t *testing.T, fx *fixture) {
				p := filepath.Join(fx.abs(t, pDir), meta.SymlinkSidecarName(fx.backingPath(t, pLongLink)[len(fx.backingPath(t, pDir))+1:]))
				flipByte(t, p, 50)
			},
			want:    one(KindSymlink, pLongLink, true),
			missing: []string{pLongLink},
		},
		{
			name: "orphan symlink sidecar",
			damage: func(t *testing.T, fx *fixture) {
				writeFile(t, filepath.Join(fx.dir, meta.SymlinkSidecarName("nothing")), []byte("x"))
			},
			want: func(t *testing.T, fx *fixture) []problemKey {
				return []problemKey{{KindOrphanSidecar, meta.SymlinkSidecarName("nothing"), ""}}
			},
		},
		{
			name: "tampered xattr value",
			damage: func(t *testing.T, fx *fixture) {
				p := fx.abs(t, pSmall)
				xn := ourXattrs(t, p)[0]
				v := make([]byte, 256)
				n, err := unix.Getxattr(p, xn, v)
				if err != nil {
					t.Fatal(err)
				}
				v[n-1] ^= 1
				if err := unix.Setxattr(p, xn, v[:n], 0); err != nil {
					t.Fatal(err)
				}
			},
			want: one(KindXattrValue, pSmall, true),
		},
		{
			name: "forged xattr name",
			damage: func(t *testing.T, fx *fixture) {
				if err := unix.Setxattr(fx.abs(t, pDir), meta.XattrPrefix+"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", []byte("v"), 0); err != nil {
					t.Fatal(err)
				}
			},
			want: one(KindXattrName, pDir, true),
		},
		{
			name: "leftover temp file",
			damage: func(t *testing.T, fx *fixture) {
				writeFile(t, filepath.Join(fx.abs(t, pDir), names.TempPrefix+"abc"), nil)
			},
			want: func(t *testing.T, fx *fixture) []problemKey {
				return []problemKey{{KindTemp, fx.backingPath(t, pDir) + "/" + names.TempPrefix + "abc", ""}}
			},
		},
	}
}

// otherChar returns a base64url character other than c.
func otherChar(c byte) byte {
	if c == 'Q' {
		return 'R'
	}
	return 'Q'
}

// similar reports whether two names differ in exactly one byte.
func similar(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	d := 0
	for i := range a {
		if a[i] != b[i] {
			d++
		}
	}
	return d == 1
}

func writeAt(t *testing.T, path string, data []byte, off int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(data, off); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func rename(t *testing.T, from, to string) {
	t.Helper()
	if err := os.Rename(from, to); err != nil {
		t.Fatal(err)
	}
}

// ourXattrs lists a backing file's EncryptFS xattrs.
func ourXattrs(t *testing.T, path string) []string {
	t.Helper()
	buf := make([]byte, 4096)
	n, err := unix.Listxattr(path, buf)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, x := range strings.Split(string(buf[:n]), "\x00") {
		if strings.HasPrefix(x, meta.XattrPrefix) {
			out = append(out, x)
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s has no EncryptFS xattr", path)
	}
	return out
}

func TestCorruptions(t *testing.T) {
	for _, c := range corruptions() {
		t.Run(c.name, func(t *testing.T) {
			fx := newFixture(t)
			c.damage(t, fx)
			want := c.want(t, fx)
			before := snapshot(t, fx.dir)
			dest := filepath.Join(t.TempDir(), "salvage")
			rep := fx.check(t, Options{Salvage: dest})
			if after := snapshot(t, fx.dir); !equalMaps(before, after) {
				t.Error("fsck or salvage changed the vault")
			}
			// A conflict copy the mount shows is no damage: such a vault
			// is clean, with the copy in Conflicts.
			if onlyCopies := len(rep.Problems) == 0 && len(rep.Conflicts) > 0; rep.Clean != onlyCopies {
				t.Fatalf("clean %v with %d problems and %d conflict copies", rep.Clean, len(rep.Problems), len(rep.Conflicts))
			}
			if got := keysOf(rep); !sameKeys(got, want) {
				t.Fatalf("problems\n got %+v\nwant %+v\nfull: %s", got, want, dump(rep))
			}
			for plain, rs := range c.ranges {
				found := false
				for _, p := range rep.Problems {
					if p.Kind == KindChunk && p.PlainPath == plain {
						found = true
						if !equalRanges(p.Ranges, rs) {
							t.Errorf("%s: ranges %v, want %v", plain, p.Ranges, rs)
						}
					}
				}
				if !found {
					t.Errorf("%s: no bad-chunk problem", plain)
				}
			}
			if c.detail != "" && !strings.Contains(dump(rep), c.detail) {
				t.Errorf("no detail %q in %s", c.detail, dump(rep))
			}
			if len(rep.SalvageErrors) > 0 {
				t.Errorf("salvage errors: %v", rep.SalvageErrors)
			}
			checkSalvage(t, fx, dest, c)
		})
	}
}

func equalRanges(a, b []Range) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func dump(rep *Report) string {
	b, _ := json.MarshalIndent(rep, "", "  ")
	return string(b)
}

// checkSalvage compares the salvage tree with the fixture's plaintext:
// files equal except zeros in the expected ranges, missing ones missing.
func checkSalvage(t *testing.T, fx *fixture, dest string, c corruption) {
	t.Helper()
	missing := make(map[string]bool)
	for _, m := range c.missing {
		missing[m] = true
		if _, err := os.Lstat(filepath.Join(dest, m)); err == nil {
			t.Errorf("salvage has %s, which should be missing", m)
		}
	}
	for p, data := range fx.files {
		if missing[p] {
			continue
		}
		got, err := os.ReadFile(filepath.Join(dest, p))
		if err != nil {
			t.Errorf("salvage: %v", err)
			continue
		}
		want := bytes.Clone(data)
		if n, ok := c.size[p]; ok {
			want = want[:n]
		}
		for _, r := range c.salvage[p] {
			clear(want[r.Start:r.End])
		}
		if !bytes.Equal(got, want) {
			t.Errorf("salvaged %s differs (%d bytes, want %d)", p, len(got), len(want))
		}
	}
	for _, l := range []string{pLink, pLongLink} {
		if missing[l] {
			continue
		}
		if _, err := os.Readlink(filepath.Join(dest, l)); err != nil {
			t.Errorf("salvage: %v", err)
		}
	}
	if _, err := os.Stat(filepath.Join(dest, SalvageReportName)); err != nil {
		t.Errorf("no salvage report: %v", err)
	}
}

func TestCheckRefusesSalvageInsideVault(t *testing.T) {
	fx := newFixture(t)
	for _, dest := range []string{fx.dir, filepath.Join(fx.dir, "x"), filepath.Dir(fx.dir)} {
		_, err := Check(context.Background(), fx.sess, Options{Salvage: dest})
		if !errors.Is(err, ErrSalvageDir) {
			t.Errorf("salvage into %s: %v", dest, err)
		}
	}
	if _, err := os.Lstat(filepath.Join(fx.dir, "x")); err == nil {
		t.Error("salvage dir created inside the vault")
	}
}

func TestCheckCancelled(t *testing.T) {
	fx := newFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rep, err := Check(ctx, fx.sess, Options{})
	if !errors.Is(err, context.Canceled) || rep == nil || rep.Clean || !rep.Interrupted {
		t.Fatalf("cancelled check: %v, %+v", err, rep)
	}
}
