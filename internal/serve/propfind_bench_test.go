package serve

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/encryptfs/encryptfs/vault"
)

// BenchmarkPropfind1000: a PROPFIND of Depth 1 of a directory of 1000
// small files, in process (the handler called directly, no network): the
// listing row of bench/serve.sh without curl and the loopback.
func BenchmarkPropfind1000(b *testing.B) {
	cipher := filepath.Join(b.TempDir(), "c")
	if err := os.Mkdir(cipher, 0o700); err != nil {
		b.Fatal(err)
	}
	v, err := vault.Create(cipher, []byte("pw"), vault.Options{KDFTime: 1, KDFMemoryKiB: 8192, KDFThreads: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer v.Close()
	if err := v.Mkdir("d", 0o700); err != nil {
		b.Fatal(err)
	}
	for i := range 1000 {
		if err := v.WriteFile(fmt.Sprintf("d/f%04d.txt", i), []byte("small file"), 0o600); err != nil {
			b.Fatal(err)
		}
	}
	h := NewHandler(Options{Vault: v})
	b.ResetTimer()
	for range b.N {
		r := httptest.NewRequest("PROPFIND", "/d/", strings.NewReader(""))
		r.Header.Set("Depth", "1")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusMultiStatus || strings.Count(w.Body.String(), "<D:response>") != 1001 {
			b.Fatalf("PROPFIND: %d, %d responses", w.Code, strings.Count(w.Body.String(), "<D:response>"))
		}
	}
}
