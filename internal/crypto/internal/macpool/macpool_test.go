package macpool

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"fmt"
	"sync"
	"testing"
)

func want(key []byte, parts ...[]byte) []byte {
	m := hmac.New(sha256.New, key)
	for _, p := range parts {
		m.Write(p)
	}
	return m.Sum(nil)
}

// A reused state gives crypto/hmac's HMAC for every message, whatever the
// messages before it were (lengths around the block size included).
func TestSameAsHMAC(t *testing.T) {
	key := bytes.Repeat([]byte{7}, 32)
	p := New(key)
	for n := range 200 {
		msg := bytes.Repeat([]byte{byte(n)}, n)
		m := p.Get()
		m.Write(msg[:n/2])
		m.Write(msg[n/2:])
		got := m.Sum(nil)
		p.Put(m)
		if !bytes.Equal(got, want(key, msg)) {
			t.Fatalf("message of %d bytes: HMAC differs", n)
		}
	}
}

// A state is not shared: concurrent users each get their own.
func TestConcurrent(t *testing.T) {
	key := []byte("a key of thirty-two bytes, here.")
	p := New(key)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for i := range 500 {
				msg := fmt.Appendf(nil, "goroutine %d message %d", g, i)
				m := p.Get()
				m.Write(msg)
				got := m.Sum(nil)
				p.Put(m)
				if !bytes.Equal(got, want(key, msg)) {
					errs <- fmt.Errorf("goroutine %d message %d: HMAC differs", g, i)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// After Drop nothing is kept and nothing is handed out, not even a state
// given back late.
func TestDrop(t *testing.T) {
	p := New(make([]byte, 32))
	m := p.Get()
	p.Put(p.Get())
	p.Drop()
	if len(p.free) != 0 {
		t.Fatalf("%d states kept after Drop", len(p.free))
	}
	p.Put(m)
	if len(p.free) != 0 || p.Get() != nil {
		t.Fatal("a state kept or handed out after Drop")
	}
}

// A reused state costs no allocation for a header-sized message.
func TestNoAllocs(t *testing.T) {
	p := New(make([]byte, 32))
	msg := make([]byte, 112)
	var sum [sha256.Size]byte
	p.Put(p.Get())
	allocs := testing.AllocsPerRun(100, func() {
		m := p.Get()
		m.Write(msg)
		m.Sum(sum[:0])
		p.Put(m)
	})
	if allocs > 0 {
		t.Fatalf("%v allocations per MAC with a kept state", allocs)
	}
}

// Sum is crypto/hmac's HMAC of the parts' concatenation, cut to out,
// and needs no allocation for parts on the stack (the reason it exists).
func TestSum(t *testing.T) {
	key := bytes.Repeat([]byte{9}, 32)
	p := New(key)
	msg := bytes.Repeat([]byte("0123456789abcdef"), 200) // past maxScratch
	for _, n := range []int{0, 1, 55, 56, 64, 112, 200, len(msg)} {
		for _, cut := range []int{0, n / 3, n} {
			var out [sha256.Size]byte
			if !p.Sum(out[:], msg[:cut], msg[cut:n]) {
				t.Fatal("Sum failed before Drop")
			}
			if !bytes.Equal(out[:], want(key, msg[:n])) {
				t.Fatalf("message of %d bytes cut at %d: HMAC differs", n, cut)
			}
			var short [16]byte
			p.Sum(short[:], msg[:n])
			if !bytes.Equal(short[:], out[:16]) {
				t.Fatalf("message of %d bytes: a 16-byte Sum is not the HMAC's prefix", n)
			}
		}
	}
	var id [16]byte
	var nums [24]byte
	var out [16]byte
	allocs := testing.AllocsPerRun(100, func() {
		p.Sum(out[:], []byte("label"), id[:], nums[:])
	})
	if allocs > 0 {
		t.Fatalf("%v allocations per Sum", allocs)
	}
	p.Drop()
	if p.Sum(out[:], id[:]) {
		t.Fatal("Sum after Drop")
	}
}

func BenchmarkHeaderMAC(b *testing.B) {
	key := make([]byte, 32)
	msg := make([]byte, 112)
	var sum [sha256.Size]byte
	b.Run("hmac.New", func(b *testing.B) {
		for b.Loop() {
			m := hmac.New(sha256.New, key)
			m.Write(msg)
			m.Sum(sum[:0])
		}
	})
	b.Run("pool", func(b *testing.B) {
		p := New(key)
		for b.Loop() {
			m := p.Get()
			m.Write(msg)
			m.Sum(sum[:0])
			p.Put(m)
		}
	})
}
