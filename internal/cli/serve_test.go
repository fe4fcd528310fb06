package cli

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/encryptfs/encryptfs/internal/fstest"
)

var servedURL = regexp.MustCompile(`(?m)^(https?://[0-9.:\[\]]+/)$`)

// startServe runs encryptfs serve webdav on dir with the password file
// pf and args, and returns the daemon and the URL it printed.
func startServe(t *testing.T, dir, pf string, args ...string) (*daemon, string) {
	t.Helper()
	d := startDaemon(t, binary, append(append([]string{"serve", "webdav", "--passfile", pf}, args...), dir)...)
	var url string
	waitFor(t, "serve webdav's URL", func() bool {
		select {
		case <-d.done:
			t.Fatalf("serve webdav exited:\n%s", d.out.String())
		default:
		}
		m := servedURL.FindStringSubmatch(d.out.String())
		if m != nil {
			url = m[1]
		}
		return m != nil
	})
	return d, url
}

// stopServe stops the server and checks that it exits cleanly.
func stopServe(t *testing.T, d *daemon) {
	t.Helper()
	d.stop()
	if code := d.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("serve webdav exited %d:\n%s", code, d.out.String())
	}
}

// rcloneEnv is the environment of rclone with the remote "v:" that is
// the WebDAV server at url (no config file).
func rcloneEnv(t *testing.T, url string, extra ...string) []string {
	env := append(os.Environ(), "RCLONE_CONFIG=/dev/null", "RCLONE_CONFIG_V_TYPE=webdav", "RCLONE_CONFIG_V_URL="+url, "RCLONE_CONFIG_V_VENDOR=other")
	return append(env, extra...)
}

func runRclone(t *testing.T, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command("rclone", args...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("rclone %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestServeWebDAVRclone copies a tree into a format-2 vault with rclone
// through serve webdav, checks it, copies it back byte for byte, and
// reads it through the CLI's own door; the server recorded freshness,
// so the vault is fresh after it stops.
func TestServeWebDAVRclone(t *testing.T) {
	requireTool(t, "rclone")
	dir, _ := newVault(t, "pw", "--format", "2")
	pf := writePassfile(t, "pw")
	src := t.TempDir()
	makeTree(t, src)
	must(t, os.Remove(filepath.Join(src, "link"))) // WebDAV has no symlinks
	d, url := startServe(t, dir, pf, "--log-paths")
	env := rcloneEnv(t, url)
	runRclone(t, env, "copy", "--create-empty-src-dirs", src, "v:tree")
	runRclone(t, env, "check", src, "v:tree")
	back := t.TempDir()
	runRclone(t, env, "copy", "--create-empty-src-dirs", "v:tree", back)
	diffTrees(t, src, back)
	if out := runRclone(t, env, "lsf", "v:"); out != "tree/\n" {
		t.Fatalf("rclone lsf v: %q", out)
	}
	stopServe(t, d)
	if !strings.Contains(d.out.String(), `PUT "/tree/dir0/f0-7.bin" 201`) {
		t.Fatalf("no log line of a PUT:\n%s", d.out.String())
	}
	exported := filepath.Join(t.TempDir(), "out")
	run(t, "", "export", "--passfile", pf, dir, exported).want(t, 0)
	diffTrees(t, src, filepath.Join(exported, "tree"))
	r := run(t, "", "freshness", "status", "--passfile", pf, dir)
	r.want(t, 0)
	if !strings.Contains(r.stdout+r.stderr, "OK") {
		t.Fatalf("freshness status after serve:\n%s%s", r.stdout, r.stderr)
	}
}

// TestServeLitmus runs the litmus WebDAV suites against the server: the
// ones it passes whole must stay whole; props and locks must not lose
// more than the failures docs/serve.md explains.
func TestServeLitmus(t *testing.T) {
	requireTool(t, "litmus")
	dir, _ := newVault(t, "pw", "--format", "2")
	d, url := startServe(t, dir, writePassfile(t, "pw"))
	defer stopServe(t, d)
	for _, c := range []struct {
		suite   string
		summary string
		fails   []string
	}{
		{"basic", "of 16 tests run: 16 passed, 0 failed", nil},
		{"copymove", "of 13 tests run: 13 passed, 0 failed", nil},
		{"props", "of 30 tests run: 29 passed, 1 failed", []string{"propfind_invalid2"}},
		{"locks", "of 34 tests run: 32 passed, 2 failed", []string{"fail_complex_cond_put", "lock_shared"}},
		{"http", "of 4 tests run: 4 passed, 0 failed", nil},
	} {
		cmd := exec.Command("litmus", url)
		cmd.Dir = t.TempDir() // its debug.log
		cmd.Env = append(os.Environ(), "TESTS="+c.suite)
		out, _ := cmd.CombinedOutput()
		if !strings.Contains(string(out), c.summary) {
			t.Errorf("litmus %s: want %q\n%s", c.suite, c.summary, out)
			continue
		}
		for _, f := range c.fails {
			if !regexp.MustCompile(`\. ` + f + `\.* FAIL`).Match(out) {
				t.Errorf("litmus %s: %s no longer fails: update the test and docs/serve.md\n%s", c.suite, f, out)
			}
		}
	}
}

// TestServeRefusals: the network rule, before any password is asked
// (stdin is empty: a prompt would fail with exit 7, not 2).
func TestServeRefusals(t *testing.T) {
	dir, _ := newVault(t, "pw", "--format", "2")
	cert, key := writeCert(t)
	users := filepath.Join(t.TempDir(), "users")
	run(t, "", "serve", "adduser", "--passfile", writePassfile(t, "u-pw"), users, "alice").want(t, 0)
	addrs := []string{"0.0.0.0:0", ":0"}
	if ip := nonLoopback(); ip != "" {
		addrs = append(addrs, net.JoinHostPort(ip, "0"))
	}
	for _, addr := range addrs {
		for _, extra := range [][]string{nil, {"--cert", cert, "--key", key}, {"--users", users}} {
			r := run(t, "", append(append([]string{"serve", "webdav", "--listen", addr}, extra...), dir)...)
			r.want(t, ExitUsage)
			if !strings.Contains(r.stderr, "not a loopback address") {
				t.Fatalf("%s %v: %s", addr, extra, r.stderr)
			}
		}
	}
	run(t, "", "serve", "webdav", "--cert", cert, dir).want(t, ExitUsage)
	run(t, "", "serve", "webdav", "--users", users, "--token-file", users, dir).want(t, ExitUsage)
	bad := filepath.Join(t.TempDir(), "bad-users")
	must(t, os.WriteFile(bad, []byte("mallory:$argon2id$v=19$m=4194304,t=1,p=1$c2FsdHNhbHRzYWx0c2FsdA$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNoaGFzaGhhc2g\n"), 0o600))
	r := run(t, "", "serve", "webdav", "--users", bad, dir)
	r.want(t, ExitUsage)
	if !strings.Contains(r.stderr, "beyond the bounds") {
		t.Fatalf("users file with m=4 GiB: %s", r.stderr)
	}
}

// TestServeTLSAuth: serve adduser's file and a self-signed certificate;
// a client without the password is refused, one with it gets in.
func TestServeTLSAuth(t *testing.T) {
	dir, _ := newVault(t, "pw", "--format", "2")
	cert, key := writeCert(t)
	users := filepath.Join(t.TempDir(), "users")
	run(t, "", "serve", "adduser", "--passfile", writePassfile(t, "u-pw"), users, "alice").want(t, 0)
	if fi, err := os.Stat(users); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("users file: %v %v", fi, err)
	}
	d, url := startServe(t, dir, writePassfile(t, "pw"), "--cert", cert, "--key", key, "--users", users)
	defer stopServe(t, d)
	if !strings.HasPrefix(url, "https://127.0.0.1:") {
		t.Fatalf("URL %s", url)
	}
	pem, err := os.ReadFile(cert)
	must(t, err)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	client := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	for _, c := range []struct {
		user, pw string
		want     int
	}{{"", "", 401}, {"alice", "wrong", 401}, {"alice", "u-pw", 207}} {
		req, _ := http.NewRequest("PROPFIND", url, nil)
		req.Header.Set("Depth", "1")
		if c.user != "" {
			req.SetBasicAuth(c.user, c.pw)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Fatalf("%s/%s: %d, want %d", c.user, c.pw, resp.StatusCode, c.want)
		}
	}
	// The log line is written once the answer is out.
	waitFor(t, "the log line of the last request", func() bool { return strings.Contains(d.out.String(), `"alice" PROPFIND - 207`) })
	if out := d.out.String(); strings.Contains(out, "u-pw") || strings.Contains(out, "wrong") || !strings.Contains(out, `"alice" PROPFIND - 207`) {
		t.Fatalf("the log holds a password:\n%s", d.out.String())
	}
}

// TestServeWhileMounted: serve refuses a vault that is mounted, unless
// --shared-storage.
func TestServeWhileMounted(t *testing.T) {
	fstest.RequireFUSE(t)
	dir, _ := newVault(t, "pw") // format 1: no freshness lock, only the mount
	pf := writePassfile(t, "pw")
	mnt := t.TempDir()
	cleanupMount(t, mnt)
	run(t, "", "mount", "--passfile", pf, dir, mnt).want(t, 0)
	r := run(t, "", "serve", "webdav", "--passfile", pf, dir)
	r.want(t, ExitMountPoint)
	if !strings.Contains(r.stderr, "is mounted on "+mnt) || !strings.Contains(r.stderr, "--shared-storage") {
		t.Fatalf("serve of a mounted vault: %s", r.stderr)
	}
	d, url := startServe(t, dir, pf, "--shared-storage")
	must(t, os.WriteFile(filepath.Join(mnt, "from-mount"), []byte("m"), 0o644))
	resp, err := http.Get(url + "from-mount")
	must(t, err)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET of a file the mount wrote: %d", resp.StatusCode)
	}
	stopServe(t, d)
	run(t, "", "unmount", mnt).want(t, 0)
}

// writeCert writes a self-signed certificate for 127.0.0.1 and its key.
func writeCert(t *testing.T) (string, string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "encryptfs serve test"},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		KeyUsage: x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	must(t, err)
	kder, err := x509.MarshalECPrivateKey(k)
	must(t, err)
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	must(t, os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644))
	must(t, os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600))
	return cert, key
}

// nonLoopback is an address of this machine beyond loopback ("": none).
func nonLoopback() string {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	return ""
}
