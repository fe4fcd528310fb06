package kdf

import (
	"bytes"
	"errors"
	"testing"
)

// seqReader returns 0, 1, 2, ... so salts are deterministic.
type seqReader struct{ n byte }

func (r *seqReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = r.n
		r.n++
	}
	return len(p), nil
}

type failReader struct{}

func (failReader) Read([]byte) (int, error) { return 0, errors.New("no randomness") }

func TestValidate(t *testing.T) {
	good, err := Cheapest(&seqReader{})
	if err != nil {
		t.Fatal(err)
	}
	if good.Time != MinTime || good.MemoryKiB != MinMemoryKiB || good.Threads != MinThreads {
		t.Fatalf("Cheapest = %+v", good)
	}
	tests := []struct {
		name string
		edit func(*Params)
		ok   bool
	}{
		{"cheapest", func(*Params) {}, true},
		{"max", func(p *Params) { p.Time, p.MemoryKiB, p.Threads = MaxTime, MaxMemoryKiB, MaxThreads }, true},
		{"algorithm", func(p *Params) { p.Algorithm = "argon2i" }, false},
		{"no algorithm", func(p *Params) { p.Algorithm = "" }, false},
		{"short salt", func(p *Params) { p.Salt = p.Salt[:16] }, false},
		{"long salt", func(p *Params) { p.Salt = append(p.Salt, 0) }, false},
		{"time 0", func(p *Params) { p.Time = 0 }, false},
		{"time 65", func(p *Params) { p.Time = MaxTime + 1 }, false},
		{"memory low", func(p *Params) { p.MemoryKiB = MinMemoryKiB - 1 }, false},
		{"memory high", func(p *Params) { p.MemoryKiB = MaxMemoryKiB + 1 }, false},
		{"threads 0", func(p *Params) { p.Threads = 0 }, false},
		{"threads 65", func(p *Params) { p.Threads = MaxThreads + 1 }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := good
			p.Salt = bytes.Clone(good.Salt)
			tt.edit(&p)
			err := p.Validate()
			if tt.ok != (err == nil) {
				t.Fatalf("Validate = %v, want ok %v", err, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrParams) {
				t.Fatalf("err = %v, want ErrParams", err)
			}
			// Key must refuse what Validate refuses (only checked for invalid
			// params: a valid "max" would really cost 4 GiB x 64 passes).
			if !tt.ok {
				if _, kerr := p.Key([]byte("pw")); !errors.Is(kerr, ErrParams) {
					t.Fatalf("Key err = %v", kerr)
				}
			}
		})
	}
}

func TestDefaultAndNew(t *testing.T) {
	p, err := Default(&seqReader{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Time != DefaultTime || p.MemoryKiB != DefaultMemoryKiB || p.Threads != DefaultThreads || p.Validate() != nil {
		t.Fatalf("Default = %+v", p)
	}
	if _, err := New(failReader{}, 1, MinMemoryKiB, 1); err == nil {
		t.Fatal("New ignored a failing random source")
	}
	if _, err := New(&seqReader{}, 0, MinMemoryKiB, 1); !errors.Is(err, ErrParams) {
		t.Fatalf("New accepted Time 0: %v", err)
	}
	a, _ := Cheapest(&seqReader{})
	b, _ := Cheapest(&seqReader{n: 1})
	if bytes.Equal(a.Salt, b.Salt) {
		t.Fatal("salt does not come from the reader")
	}
}

func TestKeyDependsOnEverything(t *testing.T) {
	base, _ := Cheapest(&seqReader{})
	k0, err := base.Key([]byte("password"))
	if err != nil || len(k0) != KeySize {
		t.Fatalf("Key = %x, %v", k0, err)
	}
	again, _ := base.Key([]byte("password"))
	if !bytes.Equal(k0, again) {
		t.Fatal("Key is not deterministic")
	}
	other := base
	other.Salt = bytes.Clone(base.Salt)
	other.Salt[0] ^= 1
	time2 := base
	time2.Time = 2
	threads2 := base
	threads2.Threads = 2
	for name, c := range map[string]struct {
		p  Params
		pw string
	}{
		"password": {base, "Password"},
		"salt":     {other, "password"},
		"time":     {time2, "password"},
		"threads":  {threads2, "password"},
	} {
		k, err := c.p.Key([]byte(c.pw))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Equal(k, k0) {
			t.Errorf("changing %s did not change the key", name)
		}
	}
}
