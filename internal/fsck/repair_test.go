package fsck

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/crypto/meta"
	"github.com/encryptfs/encryptfs/internal/crypto/names"
	"github.com/encryptfs/encryptfs/vault"
)

// TestRepair damages the fixture as an interrupted operation (or a torn
// write) would and checks what Repair does: which problems it fixes,
// which it leaves, and that the vault reads back afterwards.
func TestRepair(t *testing.T) {
	tests := []struct {
		name   string
		damage func(t *testing.T, fx *fixture) string // returns the plaintext path to read back ("" none)
		fixes  []Kind                                 // the fixes Repair makes
		left   []Kind                                 // the problems left after it
	}{
		{"clean", func(t *testing.T, fx *fixture) string { return pBig }, nil, nil},
		{"torn header MAC", func(t *testing.T, fx *fixture) string {
			flipByte(t, fx.abs(t, pBig), 25)
			return pBig
		}, []Kind{KindHeader}, nil},
		{"torn header flags", func(t *testing.T, fx *fixture) string {
			flipByte(t, fx.abs(t, pSubFile), 3) // SPARSE set without the MAC
			return pSubFile
		}, []Kind{KindHeader}, nil},
		{"torn header of a sparse file", func(t *testing.T, fx *fixture) string {
			flipByte(t, fx.abs(t, pSparse), 30)
			return pSparse
		}, []Kind{KindHeader}, nil},
		{"header whose file ID the chunks refuse", func(t *testing.T, fx *fixture) string {
			flipByte(t, fx.abs(t, pBig), 25)
			flipByte(t, fx.abs(t, pBig), 10)
			return ""
		}, nil, []Kind{KindHeader}},
		{"header of a file with a bad chunk", func(t *testing.T, fx *fixture) string {
			flipByte(t, fx.abs(t, pBig), 25)
			flipByte(t, fx.abs(t, pBig), cipherChunkOff(2)+40)
			return ""
		}, nil, []Kind{KindHeader}},
		{"temp file", func(t *testing.T, fx *fixture) string {
			write(t, filepath.Join(filepath.Dir(fx.abs(t, pSubFile)), names.TempName([]byte("123456789012"))), "x")
			return pSubFile
		}, []Kind{KindTemp}, nil},
		{"temp symlink", func(t *testing.T, fx *fixture) string {
			if err := os.Symlink("somewhere", filepath.Join(fx.dir, names.TempName([]byte("abcdefghijkl")))); err != nil {
				t.Fatal(err)
			}
			return ""
		}, []Kind{KindTemp}, nil},
		{"temp directory with files", func(t *testing.T, fx *fixture) string {
			d := filepath.Join(fx.dir, names.TempName([]byte("abcdefghijkl")))
			mkdir(t, d)
			write(t, filepath.Join(d, "f"), "x")
			return ""
		}, nil, []Kind{KindTemp}},
		{"config temp file", func(t *testing.T, fx *fixture) string {
			write(t, filepath.Join(fx.dir, config.FileName+".tmp"), "{}")
			return ""
		}, []Kind{KindTemp}, nil},
		{"orphan long-name sidecar", func(t *testing.T, fx *fixture) string {
			write(t, filepath.Join(fx.dir, names.SidecarName(names.LongNamePrefix+"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")), "x")
			return ""
		}, []Kind{KindOrphanSidecar}, nil},
		{"orphan symlink sidecar", func(t *testing.T, fx *fixture) string {
			write(t, filepath.Join(fx.dir, meta.SymlinkSidecarName("gone")), "x")
			return ""
		}, []Kind{KindOrphanSidecar}, nil},
		{"sidecar a conflict copy still uses", func(t *testing.T, fx *fixture) string {
			long := fx.abs(t, "/"+longName)
			if err := os.Rename(long, long+" (1)"); err != nil {
				t.Fatal(err)
			}
			return "/" + longName + " (1)"
		}, nil, []Kind{KindOrphanSidecar}},
		{"missing dirid of an empty directory", func(t *testing.T, fx *fixture) string {
			v := openVault(t, fx)
			if err := v.Mkdir("/dir/empty", 0o755); err != nil {
				t.Fatal(err)
			}
			v.Close()
			remove(t, filepath.Join(fx.abs(t, "/dir/empty"), names.DirIDFile))
			return "/dir/empty"
		}, []Kind{KindDirID}, nil},
		{"torn dirid of an empty directory", func(t *testing.T, fx *fixture) string {
			v := openVault(t, fx)
			if err := v.Mkdir("/dir/empty", 0o755); err != nil {
				t.Fatal(err)
			}
			v.Close()
			id := filepath.Join(fx.abs(t, "/dir/empty"), names.DirIDFile)
			remove(t, id)
			write(t, id, "short")
			return "/dir/empty"
		}, []Kind{KindDirID}, nil},
		{"missing dirid of a directory with entries", func(t *testing.T, fx *fixture) string {
			remove(t, filepath.Join(fx.abs(t, pSub), names.DirIDFile))
			return ""
		}, nil, []Kind{KindDirID}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newFixture(t)
			read := tt.damage(t, fx)
			var printed []Fix
			rr, err := Repair(context.Background(), fx.sess, func(f Fix) error {
				printed = append(printed, f)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(rr.Failed) > 0 {
				t.Fatalf("failed fixes: %v", rr.Failed)
			}
			if !reflect.DeepEqual(printed, rr.Fixes) {
				t.Errorf("before saw %d fixes, %d made", len(printed), len(rr.Fixes))
			}
			var fixed, left []Kind
			for _, f := range rr.Fixes {
				fixed = append(fixed, f.Kind)
				t.Log(f.Line())
			}
			for _, p := range rr.After.Problems {
				left = append(left, p.Kind)
			}
			slices.Sort(left)
			left = slices.Compact(left)
			if !slices.Equal(fixed, tt.fixes) || !slices.Equal(left, tt.left) {
				t.Fatalf("fixed %v, left %v; want fixed %v, left %v", fixed, left, tt.fixes, tt.left)
			}
			if read == "" {
				return
			}
			v := openVault(t, fx)
			defer v.Close()
			fi, err := v.Stat(read)
			if err != nil {
				t.Fatal(err)
			}
			if fi.IsDir() {
				if _, err := v.ReadDir(read); err != nil {
					t.Fatal(err)
				}
				return
			}
			got, err := v.ReadFile(read)
			if err != nil {
				t.Fatal(err)
			}
			want, ok := fx.files[read]
			if !ok {
				want = fx.files["/"+longName]
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%s reads %d bytes, not its %d", read, len(got), len(want))
			}
		})
	}
}

// TestRepairRefused: a fix that before refuses is not made, and Repair
// stops there.
func TestRepairRefused(t *testing.T) {
	fx := newFixture(t)
	flipByte(t, fx.abs(t, pBig), 25)
	before := snapshot(t, fx.dir)
	stop := errors.New("no")
	rr, err := Repair(context.Background(), fx.sess, func(Fix) error { return stop })
	if !errors.Is(err, stop) || len(rr.Fixes) != 0 {
		t.Fatalf("Repair = %v, %d fixes; want the refusal and none", err, len(rr.Fixes))
	}
	if after := snapshot(t, fx.dir); !reflect.DeepEqual(before, after) {
		t.Fatal("a refused repair changed the vault")
	}
}

func openVault(t *testing.T, fx *fixture) *vault.Vault {
	t.Helper()
	v, err := vault.OpenWithMasterKey(fx.dir, fx.master)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

func mkdir(t *testing.T, p string) {
	t.Helper()
	if err := os.Mkdir(p, 0o700); err != nil {
		t.Fatal(err)
	}
}

func remove(t *testing.T, p string) {
	t.Helper()
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
}
