package serve

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/encryptfs/encryptfs/vault"
)

// testServer is the door on a real listener on 127.0.0.1, over a new
// vault with the cheapest KDF.
type testServer struct {
	url    string // "http://127.0.0.1:PORT" (no slash)
	addr   string
	v      *vault.Vault
	root   string // the temp dir holding CIPHERDIR
	cipher string // CIPHERDIR
	client *http.Client
	logs   *logLines
}

// logLines collects the request log.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) add(s string) { l.mu.Lock(); l.lines = append(l.lines, s); l.mu.Unlock() }
func (l *logLines) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

// wait waits (at most 10 s) until cond holds of the lines: a request's
// line is written once its answer is out, so the client may be first.
func (l *logLines) wait(t *testing.T, what string, cond func([]string) bool) []string {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		lines := l.all()
		if cond(lines) {
			return lines
		}
		if time.Now().After(deadline) {
			t.Fatalf("log: %s never came:\n%s", what, strings.Join(lines, "\n"))
		}
	}
}

// newVault creates a vault in a new temp dir's "c".
func newVault(t *testing.T) (*vault.Vault, string, string) {
	t.Helper()
	root := t.TempDir()
	cipher := filepath.Join(root, "c")
	if err := os.Mkdir(cipher, 0o700); err != nil {
		t.Fatal(err)
	}
	v, err := vault.Create(cipher, []byte("pw"), vault.Options{KDFTime: 1, KDFMemoryKiB: 8192, KDFThreads: 1})
	if err != nil {
		t.Fatal(err)
	}
	return v, root, cipher
}

// start serves a new vault with o (o.Vault and o.Log are filled in);
// tlsConf nil: plain HTTP. Everything stops in t.Cleanup.
func start(t *testing.T, o Options, tlsConf *tls.Config) *testServer {
	t.Helper()
	v, root, cipher := newVault(t)
	logs := &logLines{}
	o.Vault, o.Log = v, logs.add
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(NewHandler(o), tlsConf)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if tlsConf != nil {
			srv.ServeTLS(ln, "", "")
		} else {
			srv.Serve(ln)
		}
	}()
	t.Cleanup(func() {
		srv.Close()
		<-done
		v.Close()
	})
	scheme := "http"
	client := &http.Client{Timeout: 20 * time.Second}
	if tlsConf != nil {
		scheme = "https"
		pool := x509.NewCertPool()
		pool.AddCert(tlsConf.Certificates[0].Leaf)
		client.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	}
	return &testServer{url: scheme + "://" + ln.Addr().String(), addr: ln.Addr().String(), v: v, root: root, cipher: cipher, client: client, logs: logs}
}

// do sends one request; hdr are name, value pairs.
func (s *testServer) do(t *testing.T, method, path, body string, hdr ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, s.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := s.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: body: %v", method, path, err)
	}
	return resp, string(b)
}

// want fails unless the request gets status.
func (s *testServer) want(t *testing.T, status int, method, path, body string, hdr ...string) (*http.Response, string) {
	t.Helper()
	resp, b := s.do(t, method, path, body, hdr...)
	if resp.StatusCode != status {
		t.Fatalf("%s %s: %d, want %d\n%s", method, path, resp.StatusCode, status, b)
	}
	return resp, b
}

// raw sends a request line and headers exactly as given (no client-side
// cleaning of the path) and returns the status and body.
func (s *testServer) raw(t *testing.T, method, target string, hdr ...string) (int, string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", s.addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	req := fmt.Sprintf("%s %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\nContent-Length: 0\r\n", method, target, s.addr)
	for i := 0; i+1 < len(hdr); i += 2 {
		req += hdr[i] + ": " + hdr[i+1] + "\r\n"
	}
	if _, err := io.WriteString(c, req+"\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("%s %q: %v", method, target, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// selfSigned makes a certificate for 127.0.0.1, valid for an hour.
func selfSigned(t *testing.T) *tls.Config {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "encryptfs test"},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}}, MinVersion: tls.VersionTLS12}
}
