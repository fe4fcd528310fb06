package session

import (
	"bytes"
	"testing"

	"github.com/encryptfs/encryptfs/internal/config"
)

// TestFileRootsOption: FileRoots needs location binding, and with it the
// engine's suite keeps file roots.
func TestFileRootsOption(t *testing.T) {
	p := config.Params{FormatVersion: 1, Cipher: "aes-256-gcm", ChunkSize: 4096}
	master := bytes.Repeat([]byte{3}, 32)
	if s, err := New(t.TempDir(), p, master, Options{FileRoots: true}); err == nil {
		s.Close()
		t.Fatal("FileRoots without BoundVaultID: no error")
	}
	for _, roots := range []bool{false, true} {
		s, err := New(t.TempDir(), p, master, Options{BoundVaultID: bytes.Repeat([]byte{1}, 16), FileRoots: roots})
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Engine().Suite().Roots(); got != roots {
			t.Errorf("FileRoots %v: suite roots %v", roots, got)
		}
		s.Close()
	}
}
