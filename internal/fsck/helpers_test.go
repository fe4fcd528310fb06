package fsck

import (
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/crypto/bind"
	"github.com/encryptfs/encryptfs/internal/session"
	"github.com/encryptfs/encryptfs/internal/tree"
	"github.com/encryptfs/encryptfs/vault"
	"golang.org/x/sys/unix"
)

// chunk is the test vaults' chunk size: small, so files of a few chunks
// stay small.
const chunk = 4096

// Plaintext paths of the test vault.
const (
	pSmall    = "/small.txt"
	pBig      = "/big.bin" // 5 chunks and 100 bytes
	pSparse   = "/sparse.bin"
	pEmpty    = "/empty"
	pDir      = "/dir"
	pSub      = "/dir/sub"
	pSubFile  = "/dir/sub/file.txt"
	pLink     = "/dir/link"
	pLongLink = "/dir/longlink"
)

// longName is a plaintext name long enough for a long-name entry.
var longName = strings.Repeat("L", 200)

const bigSize = 5*chunk + 100

// testData is deterministic pseudo-random content.
func testData(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// fixture is a small vault with every kind of object.
type fixture struct {
	dir    string
	tree   *tree.Tree
	sess   *session.Session
	master []byte
	// files maps plaintext paths of regular files to their content.
	files map[string][]byte
}

// newFixture creates the test vault and returns it closed, with a tree
// built from its master key.
func newFixture(t *testing.T) *fixture { return newFixtureCipher(t, "") }

// newFixtureCipher is newFixture with a content cipher ("": the default).
func newFixtureCipher(t *testing.T, cipher string) *fixture {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "cipher")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	v, err := vault.Create(dir, []byte("pw"), vault.Options{Cipher: cipher, ChunkSize: chunk, KDFTime: 1, KDFMemoryKiB: 8192, KDFThreads: 1})
	if err != nil {
		t.Fatal(err)
	}
	fx := &fixture{dir: dir, files: map[string][]byte{
		pSmall:           testData(1, 100),
		pBig:             testData(2, bigSize),
		pEmpty:           nil,
		pSubFile:         testData(3, chunk+1),
		"/" + longName:   testData(4, 10),
		pSparse:          nil, // set below
		"/dir/other.txt": []byte("other"),
	}}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(v.MkdirAll(pSub, 0o750))
	for p, data := range fx.files {
		if p != pSparse {
			must(v.WriteFile(p, data, 0o640))
		}
	}
	// A sparse file: a hole chunk, then data.
	f, err := v.Create(pSparse)
	must(err)
	_, err = f.WriteAt([]byte("tail"), 3*chunk)
	must(err)
	must(f.Close())
	fx.files[pSparse] = append(make([]byte, 3*chunk), "tail"...)
	must(v.Symlink("target/path", pLink))
	must(v.Symlink(strings.Repeat("t/", 1600), pLongLink))
	must(v.SetXattr(pSmall, "user.color", []byte("blue")))
	must(v.SetXattr(pDir, "user.dirattr", []byte("d")))
	master := v.MasterKey()
	must(v.Close())
	c, err := config.Load(dir)
	must(err)
	fx.master = master
	fx.sess, err = session.New(dir, c.Params, master, session.Options{})
	must(err)
	fx.tree = fx.sess.Tree()
	return fx
}

// backingPath returns the backing path (relative to the vault) of a
// plaintext path, by encrypting each component with its directory's ID.
func (fx *fixture) backingPath(t *testing.T, plain string) string {
	t.Helper()
	fd, err := backing.OpenRoot(fx.dir)
	if err != nil {
		t.Fatal(err)
	}
	var rel []string
	comps := strings.Split(strings.TrimPrefix(plain, "/"), "/")
	for i, c := range comps {
		id, err := fx.tree.DirIDs().Read(fd, bind.Place{})
		if err != nil {
			t.Fatal(err)
		}
		n, err := fx.tree.Name(id, c)
		if err != nil {
			t.Fatal(err)
		}
		rel = append(rel, n.Backing)
		if i < len(comps)-1 {
			sub, err := backing.OpenSubdir(fd, n.Backing)
			backing.Close(fd)
			if err != nil {
				t.Fatal(err)
			}
			fd = sub
		}
	}
	backing.Close(fd)
	return strings.Join(rel, "/")
}

// abs is the absolute backing path of a plaintext path.
func (fx *fixture) abs(t *testing.T, plain string) string {
	return filepath.Join(fx.dir, fx.backingPath(t, plain))
}

// check runs Check on the fixture.
func (fx *fixture) check(t *testing.T, opts Options) *Report {
	t.Helper()
	rep, err := Check(context.Background(), fx.sess, opts)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// snapshot records every backing entry's content, mode, mtime and xattrs.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := make(map[string]string)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		var b strings.Builder
		fmt.Fprintf(&b, "%o|%d.%09d|%d|", st.Mode, st.Mtim.Sec, st.Mtim.Nsec, st.Size)
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG:
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			b.Write(data)
		case unix.S_IFLNK:
			tgt, _ := os.Readlink(p)
			b.WriteString(tgt)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFLNK {
			buf := make([]byte, 1<<16)
			n, _ := unix.Llistxattr(p, buf)
			ns := strings.Split(string(buf[:n]), "\x00")
			slices.Sort(ns)
			for _, xn := range ns {
				if xn == "" {
					continue
				}
				v := make([]byte, 1<<16)
				m, _ := unix.Lgetxattr(p, xn, v)
				b.WriteString("|" + xn + "=" + string(v[:max(m, 0)]))
			}
		}
		out[p] = b.String()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// flipByte xors one byte of a file at off.
func flipByte(t *testing.T, path string, off int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := []byte{0}
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x40
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// cipherChunkOff is the backing offset of chunk i (AES-GCM: 32 bytes of
// overhead per chunk, 36-byte header).
func cipherChunkOff(i int64) int64 { return 36 + i*(chunk+32) }

// problemKey is the comparable part of a problem.
type problemKey struct {
	Kind   Kind
	Cipher string
	Plain  string
}

func keysOf(rep *Report) []problemKey {
	var out []problemKey
	for _, p := range append(slices.Clone(rep.Problems), rep.Conflicts...) {
		out = append(out, problemKey{p.Kind, p.CipherPath, p.PlainPath})
	}
	return out
}

// sameKeys compares problem lists regardless of order.
func sameKeys(a, b []problemKey) bool {
	cmp := func(x, y problemKey) int {
		return strings.Compare(string(x.Kind)+x.Cipher+x.Plain, string(y.Kind)+y.Cipher+y.Plain)
	}
	a, b = slices.Clone(a), slices.Clone(b)
	slices.SortFunc(a, cmp)
	slices.SortFunc(b, cmp)
	return slices.Equal(a, b)
}
