package siv

import (
	"bytes"
	"crypto/aes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

// unhex decodes hex with optional spaces (as printed in the RFCs).
func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCMACRFC4493 checks the subkeys and the four examples of RFC 4493 §4.
func TestCMACRFC4493(t *testing.T) {
	block, err := aes.NewCipher(unhex(t, "2b7e1516 28aed2a6 abf71588 09cf4f3c"))
	if err != nil {
		t.Fatal(err)
	}
	c := newCMAC(block)
	if got, want := c.k1[:], unhex(t, "fbeed618 35713366 7c85e08f 7236a8de"); !bytes.Equal(got, want) {
		t.Fatalf("K1 = %x, want %x", got, want)
	}
	if got, want := c.k2[:], unhex(t, "f7ddac30 6ae266cc f90bc11e e46d513b"); !bytes.Equal(got, want) {
		t.Fatalf("K2 = %x, want %x", got, want)
	}
	msg := unhex(t, "6bc1bee2 2e409f96 e93d7e11 7393172a ae2d8a57 1e03ac9c 9eb76fac 45af8e51"+
		"30c81c46 a35ce411 e5fbc119 1a0a52ef f69f2445 df4f9b17 ad2b417b e66c3710")
	tests := []struct {
		n    int
		want string
	}{
		{0, "bb1d6929 e9593728 7fa37d12 9b756746"},
		{16, "070a16b4 6b4d4144 f79bdd9d d04a287c"},
		{40, "dfa66747 de9ae630 30ca3261 1497c827"},
		{64, "51f0bebf 7e3b9d92 fc497417 79363cfe"},
	}
	for _, tt := range tests {
		var sc scratch
		c.sumMessage(&sc, msg[:tt.n])
		if want := unhex(t, tt.want); !bytes.Equal(sc.x[:], want) {
			t.Errorf("CMAC(%d bytes) = %x, want %x", tt.n, sc.x, want)
		}
	}
}

// rfcVectors are RFC 5297 Appendix A.1 (deterministic) and A.2 (nonce-based,
// two AD components and the nonce as the last component).
var rfcVectors = []struct {
	name, key string
	ad        []string
	plain     string
	out       string
}{
	{
		name:  "A.1 deterministic",
		key:   "fffefdfc fbfaf9f8 f7f6f5f4 f3f2f1f0 f0f1f2f3 f4f5f6f7 f8f9fafb fcfdfeff",
		ad:    []string{"10111213 14151617 18191a1b 1c1d1e1f 20212223 24252627"},
		plain: "11223344 55667788 99aabbcc ddee",
		out:   "85632d07 c6e8f37f 950acd32 0a2ecc93 40c02b96 90c4dc04 daef7f6a fe5c",
	},
	{
		name: "A.2 nonce-based",
		key:  "7f7e7d7c 7b7a7978 77767574 73727170 40414243 44454647 48494a4b 4c4d4e4f",
		ad: []string{
			"00112233 44556677 8899aabb ccddeeff deaddada deaddada ffeeddcc bbaa9988 77665544 33221100",
			"10203040 50607080 90a0",
			"09f91102 9d74e35b d84156c5 635688c0", // nonce
		},
		plain: "74686973 20697320 736f6d65 20706c61 696e7465 78742074 6f20656e 63727970" +
			"74207573 696e6720 5349562d 414553",
		out: "7bdb6e3b 432667eb 06f4d14b ff2fbd0f cb900f2f ddbe4043 26601965 c889bf17" +
			"dba77ceb 094fa663 b7a3f748 ba8af829 ea64ad54 4a272e9c 485b62a3 fd5c0d",
	},
}

func TestRFC5297Vectors(t *testing.T) {
	for _, v := range rfcVectors {
		t.Run(v.name, func(t *testing.T) {
			s, err := New(unhex(t, v.key))
			if err != nil {
				t.Fatal(err)
			}
			var ad [][]byte
			for _, a := range v.ad {
				ad = append(ad, unhex(t, a))
			}
			plain, want := unhex(t, v.plain), unhex(t, v.out)
			got := s.Seal(nil, plain, ad...)
			if !bytes.Equal(got, want) {
				t.Fatalf("Seal = %x\nwant   %x", got, want)
			}
			back, err := s.Open(nil, want, ad...)
			if err != nil || !bytes.Equal(back, plain) {
				t.Fatalf("Open = %x, %v", back, err)
			}
			// Dropping, reordering or changing any AD component fails.
			if len(ad) > 1 {
				swapped := append([][]byte{ad[1], ad[0]}, ad[2:]...)
				if _, err := s.Open(nil, want, swapped...); !errors.Is(err, ErrOpen) {
					t.Fatalf("swapped AD: err = %v", err)
				}
			}
			if _, err := s.Open(nil, want, ad[:len(ad)-1]...); !errors.Is(err, ErrOpen) {
				t.Fatalf("dropped AD: err = %v", err)
			}
		})
	}
}

func TestKeySizes(t *testing.T) {
	for _, n := range []int{0, 16, 24, 31, 33, 65} {
		if _, err := New(make([]byte, n)); !errors.Is(err, ErrKeySize) {
			t.Errorf("len %d: err = %v", n, err)
		}
	}
	for _, n := range []int{32, 48, 64} {
		if _, err := New(make([]byte, n)); err != nil {
			t.Errorf("len %d: %v", n, err)
		}
	}
}

// TestRoundTripLengths covers every plaintext length around the block size and
// the CTR batch size, for each key size, with and without AD.
func TestRoundTripLengths(t *testing.T) {
	for _, keyLen := range []int{32, 48, 64} {
		key := make([]byte, keyLen)
		for i := range key {
			key[i] = byte(i * 7)
		}
		s, err := New(key)
		if err != nil {
			t.Fatal(err)
		}
		for n := 0; n <= 3*ctrBatch*blockSize+17; n++ {
			plain := bytes.Repeat([]byte{byte(n)}, n)
			for _, ad := range [][][]byte{nil, {nil}, {[]byte("dir"), plain}} {
				sealed := s.Seal([]byte("pre"), plain, ad...)
				if len(sealed) != 3+Overhead+n {
					t.Fatalf("len %d", len(sealed))
				}
				got, err := s.Open([]byte("x"), sealed[3:], ad...)
				if err != nil || !bytes.Equal(got[1:], plain) {
					t.Fatalf("key %d n %d: Open = %v", keyLen, n, err)
				}
			}
		}
	}
}

func TestTamper(t *testing.T) {
	s, err := New(make([]byte, 64))
	if err != nil {
		t.Fatal(err)
	}
	ad := []byte("associated")
	sealed := s.Seal(nil, []byte("a secret message longer than a block"), ad)
	for i := range sealed {
		for _, bit := range []byte{0x01, 0x80} {
			bad := bytes.Clone(sealed)
			bad[i] ^= bit
			out := make([]byte, 0, len(bad))
			got, err := s.Open(out, bad, ad)
			if !errors.Is(err, ErrOpen) || got != nil {
				t.Fatalf("flip byte %d bit %#x: got %q, %v", i, bit, got, err)
			}
			if !bytes.Equal(out[:cap(out)][:len(bad)-Overhead], make([]byte, len(bad)-Overhead)) {
				t.Fatalf("flip byte %d: unauthenticated plaintext left in dst", i)
			}
		}
	}
	for _, n := range []int{0, 1, 15} {
		if _, err := s.Open(nil, sealed[:n], ad); !errors.Is(err, ErrOpen) {
			t.Errorf("short %d: err = %v", n, err)
		}
	}
	// The empty AD component differs from no component (RFC 5297 vector semantics).
	if _, err := s.Open(nil, s.Seal(nil, []byte("x")), nil); !errors.Is(err, ErrOpen) {
		t.Error("no AD and one empty AD component must differ")
	}
}

// TestAllocs: below streamThreshold Seal and Open do not allocate; from it
// on they allocate exactly once (the standard library's CTR stream).
func TestAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items at random under -race")
	}
	s, err := New(make([]byte, 64))
	if err != nil {
		t.Fatal(err)
	}
	plain := make([]byte, streamThreshold-1)
	ad1, ad2 := make([]byte, 25), make([]byte, 16)
	buf := make([]byte, 0, len(plain)+Overhead)
	out := make([]byte, 0, len(plain))
	sealed := s.Seal(nil, plain, ad1, ad2)
	if a := testing.AllocsPerRun(20, func() { s.Seal(buf, plain, ad1, ad2) }); a != 0 {
		t.Errorf("Seal allocates %v", a)
	}
	if a := testing.AllocsPerRun(20, func() {
		if _, err := s.Open(out, sealed, ad1, ad2); err != nil {
			t.Fatal(err)
		}
	}); a != 0 {
		t.Errorf("Open allocates %v", a)
	}
	big := make([]byte, 64<<10)
	bigBuf := make([]byte, 0, len(big)+Overhead)
	if a := testing.AllocsPerRun(20, func() { s.Seal(bigBuf, big, ad1, ad2) }); a != 1 {
		t.Errorf("Seal of 64 KiB allocates %v times, want 1", a)
	}
}

// TestCTRPathsAgree: the allocation-free per-block CTR and the standard
// library's CTR (used from streamThreshold bytes up) give the same keystream,
// including counters whose low words carry.
func TestCTRPathsAgree(t *testing.T) {
	s, err := New(bytes.Repeat([]byte{9}, 64))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range [][blockSize]byte{
		{},
		{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
		{8: 0x7f, 9: 0xff, 10: 0xff, 11: 0xff, 12: 0x7f, 13: 0xff, 14: 0xff, 15: 0xf0},
	} {
		for _, n := range []int{streamThreshold, streamThreshold + 1, 4096 + 7} {
			src := bytes.Repeat([]byte{0x5a}, n)
			var sc scratch
			sc.v = v
			fast := make([]byte, n)
			s.xorKeyStream(&sc, fast, src)
			q := v
			q[8] &= 0x7f
			q[12] &= 0x7f
			slow := make([]byte, n)
			s.xorBlocks(&sc, q, slow, src)
			if !bytes.Equal(fast, slow) {
				t.Fatalf("V=%x n=%d: CTR paths differ", v, n)
			}
		}
	}
}
