package names

import (
	"strings"
	"testing"
)

// FuzzDecrypt: decrypting any string never panics; an accepted name
// re-encrypts to exactly the same encoded name (one backing name per name).
func FuzzDecrypt(f *testing.F) {
	c := testCipher(f)
	for _, name := range []string{"a", "hello.txt", strings.Repeat("x", 200)} {
		enc, err := c.Encrypt(dirA, name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(enc)
	}
	f.Add("")
	f.Add("AAAA")
	f.Add(ConfigFile)
	f.Fuzz(func(t *testing.T, enc string) {
		name, err := c.Decrypt(dirA, enc)
		if err != nil {
			return
		}
		if Validate(name) != nil {
			t.Fatalf("Decrypt returned invalid name %q", name)
		}
		again, err := c.Encrypt(dirA, name)
		if err != nil || again != enc {
			t.Fatalf("%q decrypts to %q which encrypts to %q, %v", enc, name, again, err)
		}
	})
}

// FuzzEncrypt: every valid name round-trips and maps to a backing name that
// is never reserved and never longer than MaxBackingLen.
func FuzzEncrypt(f *testing.F) {
	c := testCipher(f)
	for _, s := range []string{"a", "..a", "ä", strings.Repeat("y", 176), "\xff\xfe"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		enc, err := c.Encrypt(dirB, name)
		if err != nil {
			if Validate(name) == nil {
				t.Fatalf("valid name %q refused: %v", name, err)
			}
			return
		}
		backing, long := Backing(enc)
		if len(backing) > MaxBackingLen || IsReserved(backing) != long {
			t.Fatalf("bad backing name %q for %q", backing, name)
		}
		if got, err := c.Decrypt(dirB, enc); err != nil || got != name {
			t.Fatalf("round trip of %q: %q, %v", name, got, err)
		}
	})
}

// FuzzCheckSidecar: never panics; an accepted sidecar is exactly the encoded
// name whose long backing name was given.
func FuzzCheckSidecar(f *testing.F) {
	c := testCipher(f)
	enc, err := c.Encrypt(dirA, strings.Repeat("z", 220))
	if err != nil {
		f.Fatal(err)
	}
	long, _ := Backing(enc)
	f.Add(long, []byte(enc))
	f.Add(long, []byte(enc+"\n"))
	f.Add(LongNamePrefix+strings.Repeat("A", 43), []byte("A"))
	f.Add("", []byte{})
	f.Fuzz(func(t *testing.T, longName string, content []byte) {
		got, err := CheckSidecar(longName, content)
		if err != nil {
			return
		}
		if got != string(content) {
			t.Fatal("CheckSidecar returned something other than the content")
		}
		if b, isLong := Backing(got); !isLong || b != longName {
			t.Fatalf("accepted sidecar %q does not belong to %q", content, longName)
		}
	})
}

// FuzzSplitLongForeign: never panics; a split names a real long-name
// entry, an accepted conflict suffix, and is never a sidecar or its copy.
func FuzzSplitLongForeign(f *testing.F) {
	long, _ := Backing(strings.Repeat("A", MaxBackingLen+1))
	h := strings.TrimPrefix(long, LongNamePrefix)
	f.Add(long + " (1)")
	f.Add("encryptfs.long.sync-conflict-20261122-101010-ABCDEFG." + h)
	f.Add("encryptfs.long.sync-conflict-x." + h)
	f.Add(long + " (1)\u202e")
	f.Add(long + LongNameSuffix)
	f.Add("encryptfs.long." + h)
	f.Add("encryptfs.long")
	f.Fuzz(func(t *testing.T, b string) {
		l, suffix, ok := SplitLongForeign(b)
		if !ok {
			return
		}
		if !IsLongName(l) || !IsConflictSuffix(suffix) || strings.HasSuffix(b, LongNameSuffix) {
			t.Fatalf("SplitLongForeign(%q) = %q, %q", b, l, suffix)
		}
		if b != l+suffix && b != LongNamePrefix[:len(LongNamePrefix)-1]+suffix+"."+l[len(LongNamePrefix):] {
			t.Fatalf("SplitLongForeign(%q) = %q, %q: not one of the two forms", b, l, suffix)
		}
	})
}
