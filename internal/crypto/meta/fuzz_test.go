package meta

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzDecodeTarget: never panics; an accepted target re-encodes to itself.
func FuzzDecodeTarget(f *testing.F) {
	s, _ := NewSymlinks(key(32, 1))
	blob, err := s.Seal(dirA, "l", "target", &countReader{})
	if err != nil {
		f.Fatal(err)
	}
	good, _ := EncodeTarget(blob)
	for _, seed := range []string{good, "", LongSymlinkMarker, "a+/=", "AB"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, target string) {
		blob, err := DecodeTarget(target)
		if err != nil {
			return
		}
		again, sidecar := EncodeTarget(blob)
		if sidecar || again != target {
			t.Fatalf("%q decodes but re-encodes to %q (sidecar %v)", target, again, sidecar)
		}
	})
}

// FuzzSymlinkOpen: never panics; an accepted blob re-seals (same nonce) to
// itself.
func FuzzSymlinkOpen(f *testing.F) {
	s, _ := NewSymlinks(key(32, 1))
	for _, target := range []string{"", "t", strings.Repeat("p/", 100)} {
		blob, err := s.Seal(dirA, "link", target, &countReader{})
		if err != nil {
			f.Fatal(err)
		}
		f.Add("link", blob)
	}
	f.Add("", []byte{})
	f.Fuzz(func(t *testing.T, name string, blob []byte) {
		target, err := s.Open(dirA, name, blob)
		if err != nil {
			return
		}
		again, err := s.Seal(dirA, name, target, bytes.NewReader(blob[:24]))
		if err != nil || !bytes.Equal(again, blob) {
			t.Fatalf("accepted blob does not re-seal to itself: %v", err)
		}
	})
}

// FuzzDecryptName: never panics; foreign names are reported as not ours; an
// accepted backing name re-encrypts to itself.
func FuzzDecryptName(f *testing.F) {
	x, _ := NewXattrs(key(64, 3), key(32, 4))
	good, err := x.EncryptName(dirA, "user.comment")
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{good, XattrPrefix, "user.other", "security.selinux", ""} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, backing string) {
		name, ok, err := x.DecryptName(dirA, backing)
		if ok != strings.HasPrefix(backing, XattrPrefix) {
			t.Fatalf("ok = %v for %q", ok, backing)
		}
		if !ok || err != nil {
			return
		}
		again, err := x.EncryptName(dirA, name)
		if err != nil || again != backing {
			t.Fatalf("%q -> %q -> %q, %v", backing, name, again, err)
		}
	})
}

// FuzzOpenValue: never panics; an accepted value blob re-seals to itself.
func FuzzOpenValue(f *testing.F) {
	x, _ := NewXattrs(key(64, 3), key(32, 4))
	const backing = "user.e.AAAA"
	for _, v := range []string{"", "value", strings.Repeat("v", 300)} {
		blob, err := x.SealValue(dirA, backing, []byte(v), &countReader{})
		if err != nil {
			f.Fatal(err)
		}
		f.Add(blob)
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, blob []byte) {
		value, err := x.OpenValue(dirA, backing, blob)
		if err != nil {
			return
		}
		again, err := x.SealValue(dirA, backing, value, bytes.NewReader(blob[:24]))
		if err != nil || !bytes.Equal(again, blob) {
			t.Fatalf("accepted blob does not re-seal to itself: %v", err)
		}
	})
}
