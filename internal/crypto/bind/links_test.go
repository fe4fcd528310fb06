package bind

import (
	"bytes"
	"encoding/hex"
	"errors"
	"testing"
)

func testLinks(t testing.TB) (*Binder, LinkList) {
	b, err := New(bytes.Repeat([]byte{0x42}, KeySize))
	if err != nil {
		t.Fatal(err)
	}
	l := LinkList{Gen: 7}
	copy(l.FileID[:], bytes.Repeat([]byte{0x11}, IDSize))
	for i := range 3 {
		l.Bindings = append(l.Bindings, b.Sum(KindFile, l.FileID[:], Place{ParentID: bytes.Repeat([]byte{byte(i)}, IDSize), EncName: "n"}))
	}
	return b, l
}

// TestLinksRoundTrip: SealLinks then OpenLinks gives the list back; every
// single-bit change, a cut, an extension, another file's ID and another
// key fail with ErrBadLinks.
func TestLinksRoundTrip(t *testing.T) {
	b, l := testLinks(t)
	raw := b.SealLinks(l)
	if len(raw) != linksHeadSize+3*Size+linksMACSize {
		t.Fatalf("%d bytes", len(raw))
	}
	got, err := b.OpenLinks(raw, l.FileID[:])
	if err != nil || got.Gen != l.Gen || got.FileID != l.FileID || len(got.Bindings) != 3 || got.Bindings[2] != l.Bindings[2] {
		t.Fatalf("OpenLinks = %+v, %v", got, err)
	}
	if !got.Has(l.Bindings[1]) || got.Has(Binding{1}) {
		t.Fatal("Has")
	}
	for i := range len(raw) * 8 {
		bad := bytes.Clone(raw)
		bad[i/8] ^= 1 << (i % 8)
		if _, err := b.OpenLinks(bad, l.FileID[:]); !errors.Is(err, ErrBadLinks) {
			t.Fatalf("bit %d flipped: %v", i, err)
		}
	}
	for _, bad := range [][]byte{raw[:len(raw)-1], append(bytes.Clone(raw), 0), raw[:linksHeadSize+linksMACSize], nil} {
		if _, err := b.OpenLinks(bad, l.FileID[:]); !errors.Is(err, ErrBadLinks) {
			t.Fatalf("%d bytes: %v", len(bad), err)
		}
	}
	if _, err := b.OpenLinks(raw, bytes.Repeat([]byte{0x12}, IDSize)); !errors.Is(err, ErrBadLinks) {
		t.Fatalf("another file's ID: %v", err)
	}
	other, _ := New(bytes.Repeat([]byte{0x43}, KeySize))
	if _, err := other.OpenLinks(raw, l.FileID[:]); !errors.Is(err, ErrBadLinks) {
		t.Fatalf("another key: %v", err)
	}
	b.Wipe()
	if _, err := b.OpenLinks(raw, l.FileID[:]); !errors.Is(err, ErrWiped) {
		t.Fatalf("after Wipe: %v", err)
	}
}

// TestLinksVector pins the format: the links file of testLinks' list cut
// to its first binding, under K_bind = 0x42×32 (docs/format.md §14). The
// expected bytes were computed independently (Python hmac/hashlib:
// K_links = HMAC-SHA256(K_bind, "encryptfs v2 links" ‖ 0x01), the
// one-block HKDF-Expand).
func TestLinksVector(t *testing.T) {
	b, l := testLinks(t)
	l.Bindings = l.Bindings[:1]
	const want = "0001" + "00000000" + "11111111111111111111111111111111" + "0000000000000007" + "00000001" +
		"1aeb795fa83a51aa6eb1833cadf7a31f" + // bind.Sum('f', 0x11×16, (0x00×16, "n"))
		"59e45be446d08ba7a8793d720b677078" // mac
	if got := hex.EncodeToString(b.SealLinks(l)); got != want {
		t.Fatalf("links file\n%s, want\n%s", got, want)
	}
}

func TestLinksName(t *testing.T) {
	id := bytes.Repeat([]byte{0xfb}, IDSize)
	n := LinksName(id)
	if n != "encryptfs.links.-_v7-_v7-_v7-_v7-_v7-w" {
		t.Fatalf("LinksName = %s", n)
	}
	got, ok := ParseLinksName(n)
	if !ok || !bytes.Equal(got, id) {
		t.Fatalf("ParseLinksName = %x, %v", got, ok)
	}
	for _, bad := range []string{"encryptfs.links.", "encryptfs.links.abc", n + "=", n + "A", "encryptfs.link.x"} {
		if _, ok := ParseLinksName(bad); ok {
			t.Errorf("ParseLinksName(%q) ok", bad)
		}
	}
}

// FuzzOpenLinks: OpenLinks never panics, and what it accepts seals back
// to the same bytes.
func FuzzOpenLinks(f *testing.F) {
	b, l := testLinks(f)
	raw := b.SealLinks(l)
	f.Add(raw)
	f.Add(raw[:40])
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, err := b.OpenLinks(raw, l.FileID[:])
		if err != nil {
			return
		}
		if !bytes.Equal(b.SealLinks(got), raw) {
			t.Fatal("accepted bytes do not round-trip")
		}
	})
}
