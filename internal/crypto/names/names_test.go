package names

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func testCipher(t testing.TB) *Cipher {
	t.Helper()
	key := make([]byte, KeySize)
	for i := range key {
		key[i] = byte(i)
	}
	c, err := New(key)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var (
	dirA = bytes.Repeat([]byte{0xaa}, DirIDSize)
	dirB = bytes.Repeat([]byte{0xbb}, DirIDSize)
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		want error
	}{
		{"a", nil},
		{"...", nil},
		{"with space and ünïcode", nil},
		{strings.Repeat("x", 255), nil},
		{"", ErrInvalidName},
		{".", ErrInvalidName},
		{"..", ErrInvalidName},
		{"a/b", ErrInvalidName},
		{"a\x00b", ErrInvalidName},
		{strings.Repeat("x", 256), ErrNameTooLong},
	}
	for _, tt := range tests {
		err := Validate(tt.name)
		if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
			t.Errorf("Validate(%.20q) = %v, want %v", tt.name, err, tt.want)
		}
	}
}

func TestNewKeySize(t *testing.T) {
	if _, err := New(make([]byte, 32)); !errors.Is(err, ErrKeySize) {
		t.Fatalf("err = %v", err)
	}
}

func TestRoundTripAndLengths(t *testing.T) {
	c := testCipher(t)
	if MaxShortNameLen != 159 || MaxLongNameLen != 363 {
		t.Fatalf("MaxShortNameLen %d MaxLongNameLen %d", MaxShortNameLen, MaxLongNameLen)
	}
	for _, n := range []int{1, 2, 3, 15, 16, 17, 100, 158, 159, 160, 175, 176, 200, 255} {
		name := strings.Repeat("n", n)
		enc, err := c.Encrypt(dirA, name)
		if err != nil {
			t.Fatal(err)
		}
		if strings.ContainsAny(enc, ". ~/=+") {
			t.Fatalf("encoded name %q has a forbidden character", enc)
		}
		backing, long := Backing(enc)
		if wantLong := n > MaxShortNameLen; long != wantLong || long != (len(enc) > MaxBackingLen) {
			t.Fatalf("n=%d: len(enc)=%d long=%v", n, len(enc), long)
		}
		if long {
			if !IsLongName(backing) || !IsReserved(backing) || len(backing) != len(LongNamePrefix)+43 {
				t.Fatalf("bad long backing %q", backing)
			}
			if !IsSidecar(SidecarName(backing)) || IsSidecar(backing) || IsLongName(SidecarName(backing)) {
				t.Fatal("sidecar classification wrong")
			}
			got, err := CheckSidecar(backing, []byte(enc))
			if err != nil || got != enc {
				t.Fatalf("CheckSidecar = %q, %v", got, err)
			}
		} else if backing != enc || IsReserved(backing) {
			t.Fatalf("short backing %q", backing)
		}
		got, err := c.Decrypt(dirA, enc)
		if err != nil || got != name {
			t.Fatalf("n=%d: Decrypt = %q, %v", n, got, err)
		}
		again, _ := c.Encrypt(dirA, name)
		if again != enc {
			t.Fatal("Encrypt is not deterministic within a directory")
		}
	}
}

func TestEncryptRejects(t *testing.T) {
	c := testCipher(t)
	if _, err := c.Encrypt(dirA, ""); !errors.Is(err, ErrInvalidName) {
		t.Errorf("empty: %v", err)
	}
	if _, err := c.Encrypt(dirA, strings.Repeat("x", 256)); !errors.Is(err, ErrNameTooLong) {
		t.Errorf("long: %v", err)
	}
	if _, err := c.Encrypt(dirA[:8], "x"); !errors.Is(err, ErrDirID) {
		t.Errorf("short dirID: %v", err)
	}
	if _, err := c.Decrypt(nil, "x"); !errors.Is(err, ErrDirID) {
		t.Errorf("nil dirID: %v", err)
	}
}

// TestDirectoryBinding: the same name differs between directories, and a name
// moved (or swapped) to another directory fails authentication.
func TestDirectoryBinding(t *testing.T) {
	c := testCipher(t)
	encA, _ := c.Encrypt(dirA, "same")
	encB, _ := c.Encrypt(dirB, "same")
	if encA == encB {
		t.Fatal("equal names in different directories encrypt equally")
	}
	if _, err := c.Decrypt(dirB, encA); !errors.Is(err, ErrBadName) {
		t.Fatalf("name moved to dirB: err = %v", err)
	}
	if _, err := c.Decrypt(dirA, encB); !errors.Is(err, ErrBadName) {
		t.Fatalf("name moved to dirA: err = %v", err)
	}
}

func TestDecryptRejects(t *testing.T) {
	c := testCipher(t)
	enc, _ := c.Encrypt(dirA, "hello.txt")
	// A name whose encoding has non-zero trailing bits (Strict) or another
	// representation of the same bytes must not decode.
	last := enc[len(enc)-1]
	nonCanonical := enc[:len(enc)-1] + string(last+1)
	tests := []struct{ name, enc string }{
		{"empty", ""},
		{"padding", enc + "=="},
		{"std alphabet", strings.NewReplacer("-", "+", "_", "/").Replace(enc) + "+"},
		{"bad trailing bits", nonCanonical},
		{"truncated", enc[:len(enc)-2]},
		{"too short", enc[:20]},
		{"newline", enc + "\n"},
		{"reserved", ConfigFile},
		{"huge", strings.Repeat("A", MaxLongNameLen+1)},
	}
	for _, tt := range tests {
		if _, err := c.Decrypt(dirA, tt.enc); !errors.Is(err, ErrBadName) {
			t.Errorf("%s: err = %v, want ErrBadName", tt.name, err)
		}
	}
	for i := range enc {
		b := []byte(enc)
		b[i] ^= 0x01
		if _, err := c.Decrypt(dirA, string(b)); !errors.Is(err, ErrBadName) {
			t.Fatalf("flip char %d (%q): err = %v", i, b, err)
		}
	}
}

func TestCheckSidecarRejects(t *testing.T) {
	c := testCipher(t)
	enc, _ := c.Encrypt(dirA, strings.Repeat("L", 200))
	long, _ := Backing(enc)
	other, _ := c.Encrypt(dirA, strings.Repeat("M", 200))
	otherLong, _ := Backing(other)
	short, _ := c.Encrypt(dirA, "short")
	tests := []struct {
		name    string
		long    string
		content string
	}{
		{"other content", long, other},
		{"swapped sidecar", otherLong, enc},
		{"trailing newline", long, enc + "\n"},
		{"short name", LongNamePrefix + longHash(short), short},
		{"not a long name", "abc", enc},
		{"sidecar name", SidecarName(long), enc},
		{"empty", long, ""},
	}
	for _, tt := range tests {
		if _, err := CheckSidecar(tt.long, []byte(tt.content)); !errors.Is(err, ErrBadName) {
			t.Errorf("%s: err = %v", tt.name, err)
		}
	}
}

func TestReservedAndLongNameClassification(t *testing.T) {
	tests := []struct {
		backing            string
		reserved, longName bool
	}{
		{ConfigFile, true, false},
		{DirIDFile, true, false},
		{"encryptfs.conf.tmp", true, false},
		{"encryptfs.conf.bak", true, false},
		{TempName([]byte{1, 2, 3}), true, false},
		{LongNamePrefix + strings.Repeat("A", 43), true, true},
		{LongNamePrefix + strings.Repeat("A", 42), true, false},
		{LongNamePrefix + strings.Repeat("A", 42) + "B", true, false}, // non-zero trailing bits
		{LongNamePrefix + strings.Repeat("A", 43) + LongNameSuffix, true, false},
		{"encryptfs.link.abc", true, false},
		{"abcDEF_-", false, false},
		{"Encryptfs.conf", false, false},
		{"abc (1)", false, false},
	}
	for _, tt := range tests {
		if got := IsReserved(tt.backing); got != tt.reserved {
			t.Errorf("IsReserved(%q) = %v", tt.backing, got)
		}
		if got := IsLongName(tt.backing); got != tt.longName {
			t.Errorf("IsLongName(%q) = %v", tt.backing, got)
		}
	}
}

func TestSplitForeign(t *testing.T) {
	c := testCipher(t)
	enc, _ := c.Encrypt(dirA, "doc.txt")
	tests := []struct {
		backing, enc, suffix string
		ok                   bool
	}{
		{enc + " (1)", enc, " (1)", true},
		{enc + ".sync-conflict-20260101-000000-ABCDEFG", enc, ".sync-conflict-20260101-000000-ABCDEFG", true},
		{enc + " (Ann's conflicted copy 2026-11-22)", enc, " (Ann's conflicted copy 2026-11-22)", true},
		{enc + "~", "", "", false},
		{enc + " (1)\u202e", "", "", false},
		{enc + "\u202etxt.sh", "", "", false},
		{enc + " (1) (2)", "", "", false},
		{enc, "", "", false},
		{" (1)", "", "", false},
		{ConfigFile + " (1)", "", "", false},
	}
	for _, tt := range tests {
		e, s, ok := SplitForeign(tt.backing)
		if e != tt.enc || s != tt.suffix || ok != tt.ok {
			t.Errorf("SplitForeign(%q) = %q, %q, %v", tt.backing, e, s, ok)
		}
		if ok {
			if name, err := c.Decrypt(dirA, e); err != nil || name != "doc.txt" {
				t.Errorf("prefix does not decrypt: %v", err)
			}
		}
	}
}

func TestPaddingHidesExactLength(t *testing.T) {
	c := testCipher(t)
	// Names of 1..15 bytes all pad to 16 and so have equally long backing
	// names; 16 bytes pads to 32.
	first, _ := c.Encrypt(dirA, "a")
	for n := 2; n <= 15; n++ {
		enc, err := c.Encrypt(dirA, strings.Repeat("a", n))
		if err != nil {
			t.Fatal(err)
		}
		if len(enc) != len(first) {
			t.Fatalf("n=%d: len %d, want %d", n, len(enc), len(first))
		}
	}
	if enc, _ := c.Encrypt(dirA, strings.Repeat("a", 16)); len(enc) == len(first) {
		t.Fatalf("16-byte name not padded to the next block")
	}
	for _, p := range [][]byte{{}, {0}, {17}, append(make([]byte, 15), 2), append(make([]byte, 14), 3, 2)} {
		if _, ok := unpad(p); ok {
			t.Fatalf("unpad accepted %v", p)
		}
	}
}
