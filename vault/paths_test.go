package vault

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestEncryptDecryptPath(t *testing.T) {
	v, dir := newTestVault(t)
	long := strings.Repeat("n", 220)
	if err := v.MkdirAll("a/"+long+"/c", 0o700); err != nil {
		t.Fatal(err)
	}
	if err := v.WriteFile("a/"+long+"/c/file", []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"a", "a/" + long, "a/" + long + "/c/file"} {
		enc, err := v.EncryptPath(p)
		if err != nil {
			t.Fatalf("EncryptPath(%s): %v", p, err)
		}
		if strings.Contains(enc, "file") || strings.Contains(enc, long) {
			t.Fatalf("EncryptPath(%s) = %s shows plaintext", p, enc)
		}
		if _, err := os.Lstat(filepath.Join(dir, enc)); err != nil {
			t.Fatalf("backing path %s: %v", enc, err)
		}
		dec, err := v.DecryptPath(enc)
		if err != nil || dec != p {
			t.Fatalf("DecryptPath(%s) = %s, %v; want %s", enc, dec, err, p)
		}
	}
	if _, err := v.DecryptPath("not-a-name"); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("DecryptPath of a foreign name: %v", err)
	}
	if _, err := v.EncryptPath("missing/x"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("EncryptPath through a missing dir: %v", err)
	}
}

func TestChmodChtimes(t *testing.T) {
	v, _ := newTestVault(t)
	if err := v.WriteFile("f", []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	mtime := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := v.Chmod("f", 0o751); err != nil {
		t.Fatal(err)
	}
	if err := v.Chtimes("f", time.Time{}, mtime); err != nil {
		t.Fatal(err)
	}
	fi, err := v.Stat("f")
	if err != nil || fi.Mode() != 0o751 || !fi.ModTime().Equal(mtime) {
		t.Fatalf("Stat = %v %v, %v", fi.Mode(), fi.ModTime(), err)
	}
	if os.Geteuid() != 0 {
		return
	}
	if err := v.Lchown("f", 65534, 65534); err != nil {
		t.Fatal(err)
	}
	fi, _ = v.Stat("f")
	if st := fi.Sys().(*unix.Stat_t); st.Uid != 65534 || st.Gid != 65534 {
		t.Fatalf("owner %d:%d after Lchown", st.Uid, st.Gid)
	}
}
