package serve

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// clients is how many clients run at once in the concurrency tests: the
// number issue 21 asks for.
const clients = 16

// pattern is client k's body of n bytes: 8-byte words (k+1, word index),
// so that every byte of a file several clients wrote tells whose it is
// and where it belongs.
func pattern(k, n int) []byte {
	b := make([]byte, n+8)
	for w := 0; w*8 < n; w++ {
		binary.BigEndian.PutUint64(b[w*8:], uint64(k+1)<<56|uint64(w))
	}
	return b[:n]
}

// TestConcurrentClients: 16 clients at once, each PUTting, GETting and
// Range-GETting its own file, then 16 clients PUTting the same file at
// once. Each of the own files must come back whole. On the shared one,
// x/net/webdav takes a write lock per PUT, so a PUT that meets another
// gets 423 Locked and its client tries again, as WebDAV clients do; the
// file must end as one client's whole body, never a mix.
func TestConcurrentClients(t *testing.T) {
	s := start(t, Options{}, nil)
	const size = 1<<20 + 12345 // more than one chunk, and a partial last one
	run := func(what string, f func(k int) error) {
		t.Helper()
		var wg sync.WaitGroup
		errs := make([]error, clients)
		for k := range clients {
			wg.Add(1)
			go func() { defer wg.Done(); errs[k] = f(k) }()
		}
		wg.Wait()
		for k, err := range errs {
			if err != nil {
				t.Fatalf("%s, client %d: %v", what, k, err)
			}
		}
	}

	run("own files", func(k int) error {
		body := pattern(k, size)
		path := fmt.Sprintf("/own-%02d", k)
		if err := s.put(path, body); err != nil {
			return err
		}
		got, err := s.get(path, "")
		if err != nil {
			return err
		}
		if !bytes.Equal(got, body) {
			return fmt.Errorf("GET %s: %d bytes differ from the %d PUT", path, len(got), len(body))
		}
		for i := range 8 { // ranges across chunk edges, and the tail
			off := (k*7919 + i*131071) % size
			end := min(off+40000, size)
			got, err := s.get(path, fmt.Sprintf("bytes=%d-%d", off, end-1))
			if err != nil {
				return err
			}
			if !bytes.Equal(got, body[off:end]) {
				return fmt.Errorf("GET %s bytes=%d-%d: wrong bytes", path, off, end-1)
			}
		}
		return nil
	})

	var locked atomic.Int64
	run("one file", func(k int) error {
		for {
			err := s.put("/shared", pattern(k, size))
			if !errors.Is(err, errLocked) {
				return err
			}
			locked.Add(1)
			time.Sleep(time.Duration(1+k) * time.Millisecond)
		}
	})
	got, err := s.get("/shared", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("shared file: %d PUTs met another's lock (423) and were retried", locked.Load())
	if len(got) != size || got[0] < 1 || got[0] > clients || !bytes.Equal(got, pattern(int(got[0])-1, size)) {
		t.Fatalf("shared file: %d bytes, not one client's whole body", len(got))
	}
}

// errLocked: a PUT met another request's lock (423).
var errLocked = errors.New("423 Locked")

// TestBigPut streams a 2 GiB PUT (ENCRYPTFS_SERVE_BIG_PUT bytes, if set)
// and GETs it back, checking the SHA-256 both ways, while the server's
// heap is sampled: streaming must not hold the body. The bound, 64 MiB
// over the heap before, is far below the body and far above the
// engine's buffers.
func TestBigPut(t *testing.T) {
	size := int64(2 << 30)
	if v := os.Getenv("ENCRYPTFS_SERVE_BIG_PUT"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("ENCRYPTFS_SERVE_BIG_PUT: %v", err)
		}
		size = n
	}
	s := start(t, Options{}, nil)
	s.client.Timeout = 0 // minutes under -race

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()

	sent := sha256.New()
	body := io.TeeReader(io.LimitReader(keystream(t), size), sent)
	req, err := http.NewRequest("PUT", s.url+"/big", body)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = size
	resp, err := s.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("PUT: %d", resp.StatusCode)
	}

	resp, err = s.client.Get(s.url + "/big")
	if err != nil {
		t.Fatal(err)
	}
	got := sha256.New()
	n, err := io.Copy(got, resp.Body)
	resp.Body.Close()
	close(stop)
	<-sampled
	if err != nil {
		t.Fatal(err)
	}
	if n != size || !bytes.Equal(got.Sum(nil), sent.Sum(nil)) {
		t.Fatalf("GET: %d bytes, sha256 %x; PUT %d bytes, sha256 %x", n, got.Sum(nil), size, sent.Sum(nil))
	}
	grew := int64(peak.Load()) - int64(before.HeapInuse)
	t.Logf("%d MiB PUT and GET: heap in use %d MiB before, peak %d MiB (+%d MiB)",
		size>>20, before.HeapInuse>>20, peak.Load()>>20, grew>>20)
	if grew > 64<<20 {
		t.Fatalf("heap grew by %d MiB while streaming %d MiB: the body is held", grew>>20, size>>20)
	}
}

// keystream is an endless deterministic stream of bytes that do not
// compress or repeat: AES-CTR over zeros, under a fixed key.
func keystream(t *testing.T) io.Reader {
	block, err := aes.NewCipher(make([]byte, 16))
	if err != nil {
		t.Fatal(err)
	}
	return cipher.StreamReader{S: cipher.NewCTR(block, make([]byte, 16)), R: zeros{}}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// put PUTs body to path and wants 201 or 204 (423: errLocked).
func (s *testServer) put(path string, body []byte) error {
	req, err := http.NewRequest("PUT", s.url+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode == http.StatusLocked {
		return fmt.Errorf("PUT %s: %w", path, errLocked)
	}
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("PUT %s: %d", path, resp.StatusCode)
	}
	return nil
}

// get GETs path, with a Range header unless rng is "", and wants 200 or
// 206.
func (s *testServer) get(path, rng string) ([]byte, error) {
	req, err := http.NewRequest("GET", s.url+path, nil)
	if err != nil {
		return nil, err
	}
	if rng != "" {
		req.Header.Set("Range", rng)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	want := http.StatusOK
	if rng != "" {
		want = http.StatusPartialContent
	}
	if resp.StatusCode != want {
		return nil, fmt.Errorf("GET %s %s: %d, want %d", path, rng, resp.StatusCode, want)
	}
	return io.ReadAll(resp.Body)
}
