package meta

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// countReader is a deterministic nonce source for tests.
type countReader struct{ n byte }

func (r *countReader) Read(p []byte) (int, error) {
	for i := range p {
		r.n++
		p[i] = r.n
	}
	return len(p), nil
}

type failReader struct{}

func (failReader) Read([]byte) (int, error) { return 0, errors.New("no randomness") }

func key(n int, seed byte) []byte { return bytes.Repeat([]byte{seed}, n) }

var (
	dirA = key(IDSize, 0xa1)
	dirB = key(IDSize, 0xb2)
)

func TestLimits(t *testing.T) {
	if MaxInlineTarget != 3031 || MaxXattrName != 175 || BlobOverhead != 40 {
		t.Fatalf("MaxInlineTarget %d MaxXattrName %d BlobOverhead %d", MaxInlineTarget, MaxXattrName, BlobOverhead)
	}
}

func TestSymlinkRoundTripAndEncoding(t *testing.T) {
	s, err := NewSymlinks(key(32, 1))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{0, 1, 100, MaxInlineTarget, MaxInlineTarget + 1, MaxTarget} {
		target := strings.Repeat("t", n)
		blob, err := s.Seal(dirA, "link", target, &countReader{})
		if err != nil {
			t.Fatal(err)
		}
		if len(blob) != n+BlobOverhead {
			t.Fatalf("blob len %d", len(blob))
		}
		enc, sidecar := EncodeTarget(blob)
		if wantSidecar := n > MaxInlineTarget; sidecar != wantSidecar {
			t.Fatalf("n=%d: sidecar = %v", n, sidecar)
		}
		if sidecar {
			if enc != LongSymlinkMarker {
				t.Fatalf("sidecar target %q", enc)
			}
			if l, err := BlobTargetLen(int64(len(blob))); err != nil || l != int64(n) {
				t.Fatalf("n=%d: BlobTargetLen = %d, %v", n, l, err)
			}
		} else {
			if l, err := TargetLen(int64(len(enc))); err != nil || l != int64(n) {
				t.Fatalf("n=%d: TargetLen = %d, %v", n, l, err)
			}
			if len(enc) > MaxBackingTarget {
				t.Fatalf("inline target of %d bytes", len(enc))
			}
			if blob, err = DecodeTarget(enc); err != nil {
				t.Fatal(err)
			}
		}
		got, err := s.Open(dirA, "link", blob)
		if err != nil || got != target {
			t.Fatalf("n=%d: Open = %v", n, err)
		}
	}
	if _, err := s.Seal(dirA, "l", strings.Repeat("t", MaxTarget+1), &countReader{}); !errors.Is(err, ErrTooLong) {
		t.Fatalf("too long: %v", err)
	}
	if _, err := s.Seal(dirA, "l", "t", failReader{}); err == nil {
		t.Fatal("Seal ignored a failing random source")
	}
	if _, err := s.Seal(dirA[:4], "l", "t", &countReader{}); !errors.Is(err, ErrID) {
		t.Fatalf("short dirID: %v", err)
	}
}

// TestTargetLenRejects: backing lengths no blob encodes to are corrupt.
func TestTargetLenRejects(t *testing.T) {
	for _, n := range []int64{0, 1, 14, 50, 53, MaxBackingTarget + 1} {
		if _, err := TargetLen(n); !errors.Is(err, ErrCorrupt) {
			t.Errorf("TargetLen(%d): %v, want ErrCorrupt", n, err)
		}
	}
	for _, n := range []int64{0, BlobOverhead - 1, BlobOverhead + MaxTarget + 1} {
		if _, err := BlobTargetLen(n); !errors.Is(err, ErrCorrupt) {
			t.Errorf("BlobTargetLen(%d): %v, want ErrCorrupt", n, err)
		}
	}
}

// TestSymlinkBinding: a target moved to another name or directory, or
// tampered with, fails.
func TestSymlinkBinding(t *testing.T) {
	s, _ := NewSymlinks(key(32, 1))
	blob, _ := s.Seal(dirA, "a", "/etc/passwd", &countReader{})
	tests := []struct {
		name  string
		dirID []byte
		link  string
		blob  []byte
	}{
		{"other dir", dirB, "a", blob},
		{"other name", dirA, "b", blob},
		{"truncated", dirA, "a", blob[:len(blob)-1]},
		{"too short", dirA, "a", blob[:BlobOverhead-1]},
		{"empty", dirA, "a", nil},
	}
	for _, tt := range tests {
		if _, err := s.Open(tt.dirID, tt.link, tt.blob); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: err = %v", tt.name, err)
		}
	}
	for i := range blob {
		bad := bytes.Clone(blob)
		bad[i] ^= 0x40
		if _, err := s.Open(dirA, "a", bad); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("flip byte %d: err = %v", i, err)
		}
	}
	other, _ := NewSymlinks(key(32, 2))
	if _, err := other.Open(dirA, "a", blob); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("other key: %v", err)
	}
}

func TestDecodeTargetRejects(t *testing.T) {
	good, _ := EncodeTarget(key(50, 7))
	for _, target := range []string{LongSymlinkMarker, good + "=", good + "\n", "a+b/", "A", strings.Repeat("A", MaxBackingTarget+1)} {
		if _, err := DecodeTarget(target); !errors.Is(err, ErrCorrupt) {
			t.Errorf("DecodeTarget(%.30q) err = %v", target, err)
		}
	}
}

func TestSymlinkSidecarName(t *testing.T) {
	a, b := SymlinkSidecarName("abc"), SymlinkSidecarName("abd")
	if a == b || !strings.HasPrefix(a, SymlinkSidecarPrefix) || len(a) != len(SymlinkSidecarPrefix)+43 {
		t.Fatalf("%q %q", a, b)
	}
}

func TestXattrRoundTrip(t *testing.T) {
	x, err := NewXattrs(key(64, 3), key(32, 4))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"user.a", "user.mime_type", "user." + strings.Repeat("n", MaxXattrName-5)} {
		backing, err := x.EncryptName(dirA, name)
		if err != nil {
			t.Fatal(err)
		}
		if len(backing) > 255 || !strings.HasPrefix(backing, XattrPrefix) {
			t.Fatalf("backing %q", backing)
		}
		again, _ := x.EncryptName(dirA, name)
		other, _ := x.EncryptName(dirB, name)
		if again != backing || other == backing {
			t.Fatal("name encryption must be deterministic per object and differ between objects")
		}
		got, ok, err := x.DecryptName(dirA, backing)
		if err != nil || !ok || got != name {
			t.Fatalf("DecryptName = %q, %v, %v", got, ok, err)
		}
		if _, ok, err := x.DecryptName(dirB, backing); !ok || !errors.Is(err, ErrCorrupt) {
			t.Fatalf("name moved to another object: %v, %v", ok, err)
		}
		for _, value := range [][]byte{{}, []byte("v"), key(5000, 9)} {
			blob, err := x.SealValue(dirA, backing, value, &countReader{})
			if err != nil {
				t.Fatal(err)
			}
			got, err := x.OpenValue(dirA, backing, blob)
			if err != nil || !bytes.Equal(got, value) || got == nil {
				t.Fatalf("OpenValue = %q, %v", got, err)
			}
			if _, err := x.OpenValue(dirB, backing, blob); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("value moved to another object: %v", err)
			}
			if _, err := x.OpenValue(dirA, other, blob); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("value moved to another name: %v", err)
			}
		}
	}
}

func TestXattrRejects(t *testing.T) {
	x, _ := NewXattrs(key(64, 3), key(32, 4))
	for _, name := range []string{"trusted.x", "security.selinux", "system.posix_acl_access", "user.", "user", ""} {
		if _, err := x.EncryptName(dirA, name); !errors.Is(err, ErrNotUser) {
			t.Errorf("EncryptName(%q) err = %v", name, err)
		}
	}
	if _, err := x.EncryptName(dirA, "user."+strings.Repeat("n", MaxXattrName-4)); !errors.Is(err, ErrTooLong) {
		t.Errorf("long name: %v", err)
	}
	if _, err := x.SealValue(dirA, "user.e.x", make([]byte, MaxXattrValue+1), &countReader{}); !errors.Is(err, ErrTooLong) {
		t.Errorf("long value: %v", err)
	}
	if _, ok, err := x.DecryptName(dirA, "user.plain"); ok || err != nil {
		t.Errorf("foreign name: ok=%v err=%v", ok, err)
	}
	good, _ := x.EncryptName(dirA, "user.k")
	for _, backing := range []string{XattrPrefix, XattrPrefix + "====", good + "A", good[:len(good)-1], XattrPrefix + strings.Repeat("A", 300)} {
		if _, ok, err := x.DecryptName(dirA, backing); !ok || !errors.Is(err, ErrCorrupt) {
			t.Errorf("DecryptName(%.30q) = %v, %v", backing, ok, err)
		}
	}
	if _, err := NewXattrs(key(32, 3), key(32, 4)); !errors.Is(err, ErrKeySize) {
		t.Errorf("short name key: %v", err)
	}
	if _, err := NewXattrs(key(64, 3), key(16, 4)); !errors.Is(err, ErrKeySize) {
		t.Errorf("short value key: %v", err)
	}
}
