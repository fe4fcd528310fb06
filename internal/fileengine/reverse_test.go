package fileengine

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/encryptfs/encryptfs/internal/crypto/content"
)

// testNonces derives chunk nonces from the file ID and index (SHA-256,
// not keyed: the tests need determinism, not secrecy).
type testNonces struct{}

func (testNonces) ChunkNonce(id content.FileID, index uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], index)
	sum := sha256.Sum256(append(id[:], b[:]...))
	return sum[:16]
}

// sealWhole is the reference: the stored form of plain sealed in one go,
// header then every chunk, without the engine. An empty file is empty
// (no header), as in forward mode.
func sealWhole(tb testing.TB, s *content.Suite, plain []byte, id content.FileID) []byte {
	tb.Helper()
	if len(plain) == 0 {
		return nil
	}
	fc, err := s.File(id)
	if err != nil {
		tb.Fatal(err)
	}
	out := s.MarshalHeader(content.Header{FileID: id})
	cs := s.ChunkSize()
	for i := 0; i*cs < len(plain); i++ {
		chunk := plain[i*cs : min((i+1)*cs, len(plain))]
		final := (i+1)*cs >= len(plain)
		out = fc.Seal(out, chunk, uint64(i), final, testNonces{}.ChunkNonce(id, uint64(i)))
	}
	return out
}

// TestReverseReadAt reads ranges of reverse files at every kind of edge
// (0, the header's end, around chunk boundaries, the last partial chunk,
// past the end) and compares them with sealing the whole file at once, on
// the sequential and the parallel path.
func TestReverseReadAt(t *testing.T) {
	const chunk = 4096
	s := newTestSuite(t, content.AES256SIV, chunk)
	ccs := int64(s.CipherChunkSize())
	h := int64(content.HeaderSize)
	id := content.FileID{1, 2, 3, 4}
	r := rand.New(rand.NewPCG(1, 2))
	for _, size := range []int{0, 1, chunk - 1, chunk, chunk + 1, 5*chunk + 100, 12 * chunk} {
		plain := randomBytes(r, size)
		want := sealWhole(t, s, plain, id)
		total := int64(len(want))
		offsets := []int64{0, 1, h - 1, h, h + 1, h + ccs - 1, h + ccs, h + ccs + 1,
			h + 2*ccs, total - 1, total, total + 1, total + ccs}
		lengths := []int64{1, 7, ccs - 1, ccs, ccs + 1, 3 * ccs, 9*ccs + 5, total}
		for name, opts := range map[string]Options{"seq": sequential(1), "par": parallel(1)} {
			e := NewEngine(s, opts)
			rf, err := e.OpenReverse(bytes.NewReader(plain), int64(size), id, testNonces{})
			if err != nil {
				t.Fatal(err)
			}
			if rf.Size() != total {
				t.Fatalf("size %d: Size() = %d, want %d", size, rf.Size(), total)
			}
			for _, off := range offsets {
				for _, n := range lengths {
					if off < 0 || n <= 0 {
						continue
					}
					t.Run(fmt.Sprintf("%s/size=%d/off=%d/len=%d", name, size, off, n), func(t *testing.T) {
						checkReverseRange(t, rf, want, off, n)
					})
				}
			}
		}
	}
}

// checkReverseRange reads n bytes at off and checks them and the error
// against want, the whole stored file.
func checkReverseRange(t *testing.T, rf *ReverseFile, want []byte, off, n int64) {
	t.Helper()
	got := make([]byte, n)
	k, err := rf.ReadAt(got, off)
	total := int64(len(want))
	wantN := int(max(0, min(n, total-off)))
	if k != wantN {
		t.Fatalf("ReadAt = %d bytes, want %d (err %v)", k, wantN, err)
	}
	if wantN < int(n) && err != io.EOF {
		t.Fatalf("short read: err = %v, want io.EOF", err)
	}
	if wantN == int(n) && err != nil {
		t.Fatalf("full read: err = %v", err)
	}
	if wantN > 0 && !bytes.Equal(got[:k], want[off:off+int64(k)]) {
		t.Fatalf("bytes [%d, %d) differ from sealing the whole file", off, off+int64(k))
	}
}

// TestReverseSequentialReads reads a reverse file front to back in
// requests that do not align with chunks (as the kernel's readahead does),
// so that the edge cache is used, and checks the result and that the
// stored form opens as an ordinary encrypted file.
func TestReverseSequentialReads(t *testing.T) {
	const chunk = 4096
	s := newTestSuite(t, content.AES256SIV, chunk)
	plain := randomBytes(rand.New(rand.NewPCG(3, 4)), 40*chunk+17)
	id := content.FileID{9}
	want := sealWhole(t, s, plain, id)
	for _, req := range []int{1000, 32 << 10, 128 << 10} {
		e := NewEngine(s, parallel(2))
		rf, err := e.OpenReverse(bytes.NewReader(plain), int64(len(plain)), id, testNonces{})
		if err != nil {
			t.Fatal(err)
		}
		var got []byte
		buf := make([]byte, req)
		for off := int64(0); ; off += int64(req) {
			k, err := rf.ReadAt(buf, off)
			got = append(got, buf[:k]...)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("req %d: ReadAt at %d: %v", req, off, err)
			}
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("req %d: sequential reads differ from sealing the whole file", req)
		}
		f := openMem(t, e, NewMemBackingFrom(got))
		back, err := readAll(f)
		if err != nil || !bytes.Equal(back, plain) {
			t.Fatalf("req %d: the stored form does not open to the plaintext (err %v)", req, err)
		}
	}
}

// TestReverseConcurrentReads reads one reverse file from several
// goroutines at overlapping offsets (run with -race).
func TestReverseConcurrentReads(t *testing.T) {
	const chunk = 4096
	s := newTestSuite(t, content.AES256SIV, chunk)
	plain := randomBytes(rand.New(rand.NewPCG(5, 6)), 30*chunk+1)
	id := content.FileID{7}
	want := sealWhole(t, s, plain, id)
	e := NewEngine(s, parallel(3))
	rf, err := e.OpenReverse(bytes.NewReader(plain), int64(len(plain)), id, testNonces{})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 7))
			for range 50 {
				off := r.Int64N(int64(len(want)))
				n := 1 + r.IntN(10*chunk)
				buf := make([]byte, n)
				k, err := rf.ReadAt(buf, off)
				if err != nil && err != io.EOF {
					errs <- err
					return
				}
				if !bytes.Equal(buf[:k], want[off:off+int64(k)]) {
					errs <- fmt.Errorf("bytes at %d differ", off)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestReverseShrunk: a plaintext shorter than the size it was opened with
// fails the read with ErrChanged instead of inventing bytes.
func TestReverseShrunk(t *testing.T) {
	const chunk = 4096
	s := newTestSuite(t, content.AES256SIV, chunk)
	plain := randomBytes(rand.New(rand.NewPCG(8, 9)), 3*chunk)
	e := NewEngine(s, sequential(1))
	rf, err := e.OpenReverse(bytes.NewReader(plain[:2*chunk+5]), int64(len(plain)), content.FileID{1}, testNonces{})
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, rf.Size())
	if _, err := rf.ReadAt(buf, 0); !errors.Is(err, ErrChanged) {
		t.Fatalf("ReadAt of a shrunk file: %v, want ErrChanged", err)
	}
	// The chunks before the cut still read.
	if _, err := rf.ReadAt(buf[:content.HeaderSize+chunk], 0); err != nil {
		t.Fatalf("ReadAt before the cut: %v", err)
	}
}

// TestReverseNeedsSIV: derived nonces are only safe with aes-256-siv.
func TestReverseNeedsSIV(t *testing.T) {
	for _, alg := range []content.Algorithm{content.AES256GCM, content.XChaCha20Poly1305} {
		e := NewEngine(newTestSuite(t, alg, 4096), sequential(1))
		if _, err := e.OpenReverse(bytes.NewReader(nil), 0, content.FileID{}, testNonces{}); !errors.Is(err, ErrNotSIV) {
			t.Fatalf("%s: OpenReverse: %v, want ErrNotSIV", alg, err)
		}
	}
}
