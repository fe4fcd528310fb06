package serve

import (
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestAuthUsers serves over TLS with a users file: no credentials, a
// wrong password, an unknown user are refused (401 with a challenge);
// the right password is let in; the log never holds a password.
func TestAuthUsers(t *testing.T) {
	const pw = "correct horse battery"
	line, err := HashLine(rand.Reader, "alice", []byte(pw))
	if err != nil {
		t.Fatal(err)
	}
	users, err := ParseUsers(SetUser([]byte("# users\n"), "alice", line), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, Options{Auth: users, LogPaths: true}, selfSigned(t))
	resp, _ := s.want(t, http.StatusUnauthorized, "PROPFIND", "/", "", "Depth", "1")
	if !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Basic ") {
		t.Fatalf("challenge %q", resp.Header.Get("WWW-Authenticate"))
	}
	s.want(t, http.StatusUnauthorized, "PUT", "/x", "x")
	for _, cred := range [][2]string{{"alice", "wrong"}, {"bob", pw}, {"alice", ""}, {"", pw}, {"alice", pw + " "}} {
		req, _ := http.NewRequest("GET", s.url+"/", nil)
		req.SetBasicAuth(cred[0], cred[1])
		resp, err := s.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("%q: %d, want 401", cred, resp.StatusCode)
		}
	}
	for range 2 { // the second is answered from the cache of verified passwords
		req, _ := http.NewRequest("PUT", s.url+"/x", strings.NewReader("data"))
		req.SetBasicAuth("alice", pw)
		resp, err := s.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("right password: %d", resp.StatusCode)
		}
	}
	if got, _ := s.v.ReadFile("x"); string(got) != "data" {
		t.Fatalf("x: %q", got)
	}
	// Plain HTTP to the TLS listener gets nothing of the vault.
	if status, body := s.raw(t, "GET", "/x"); status != http.StatusBadRequest || strings.Contains(body, "data") {
		t.Fatalf("plain HTTP to TLS: %d %q", status, body)
	}
	logs := s.logs.wait(t, "9 lines", func(l []string) bool { return len(l) >= 9 })
	if len(logs) != 9 {
		t.Fatalf("%d log lines for 9 requests:\n%s", len(logs), strings.Join(logs, "\n"))
	}
	for _, l := range logs {
		if strings.Contains(l, "horse") || strings.Contains(l, "wrong") || strings.Contains(l, "Basic") || strings.Contains(l, "\n") {
			t.Fatalf("log line with a secret: %q", l)
		}
	}
	if !strings.Contains(logs[len(logs)-1], `"alice" PUT "/x" 201`) {
		t.Fatalf("last log line %q", logs[len(logs)-1])
	}
}

// TestAuthToken serves with a bearer token.
func TestAuthToken(t *testing.T) {
	const token = "0123456789abcdef-token"
	tok, err := ParseToken([]byte(token + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, Options{Auth: tok}, selfSigned(t))
	resp, _ := s.want(t, http.StatusUnauthorized, "GET", "/", "")
	if !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer ") {
		t.Fatalf("challenge %q", resp.Header.Get("WWW-Authenticate"))
	}
	s.want(t, http.StatusUnauthorized, "PUT", "/t", "t", "Authorization", "Bearer "+token+"x")
	s.want(t, http.StatusUnauthorized, "PUT", "/t", "t", "Authorization", "Bearer "+token[:len(token)-1])
	s.want(t, http.StatusUnauthorized, "PUT", "/t", "t", "Authorization", "Basic "+token)
	s.want(t, http.StatusCreated, "PUT", "/t", "t", "Authorization", "Bearer "+token)
	for _, l := range s.logs.wait(t, "5 lines", func(l []string) bool { return len(l) >= 5 }) {
		if strings.Contains(l, "0123456789") {
			t.Fatalf("log line with the token: %q", l)
		}
		// Without LogPaths, no plaintext name reaches the log.
		if strings.Contains(l, "/t") || !strings.Contains(l, " - ") {
			t.Fatalf("log line with a path: %q", l)
		}
	}
	for _, short := range []string{"", "\n", "short", "  0123456789abcde  "} {
		if _, err := ParseToken([]byte(short)); !errors.Is(err, ErrToken) {
			t.Errorf("token %q: %v", short, err)
		}
	}
}

// TestUsersFileBounds: a users file may not ask for a cost that makes a
// login a denial of service, nor be malformed.
func TestUsersFileBounds(t *testing.T) {
	salt := "c2FsdHNhbHRzYWx0c2FsdA"                      // 16 bytes
	hash := "aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNoaGFzaGhhc2g" // 32 bytes
	ok := func(m, tm, p int) string {
		return fmt.Sprintf("u:$argon2id$v=19$m=%d,t=%d,p=%d$%s$%s", m, tm, p, salt, hash)
	}
	if _, err := ParseUsers([]byte(ok(65536, 2, 1)), rand.Reader); err != nil {
		t.Fatalf("a valid line: %v", err)
	}
	for _, bad := range []string{
		ok(4<<20, 1, 1), ok(maxHashMemoryKiB+1, 1, 1), ok(65536, 1000, 1), ok(65536, 0, 1), ok(65536, 1, 255), ok(65536, 1, 0), ok(4, 1, 1),
		"u:$argon2i$v=19$m=65536,t=2,p=1$" + salt + "$" + hash,
		"u:$argon2id$v=16$m=65536,t=2,p=1$" + salt + "$" + hash,
		"u:$argon2id$v=19$m=65536,t=2,p=1,x=1$" + salt + "$" + hash,
		"u:$argon2id$v=19$m=65536,t=2,p=1$c2FsdA$" + hash,      // short salt
		"u:$argon2id$v=19$m=65536,t=2,p=1$" + salt + "$aGFzaA", // short hash
		"u:$argon2id$v=19$m=65536,t=2,p=1$" + salt + "$" + hash + "$",
		"u", "", "# only a comment", ok(65536, 2, 1) + "\n" + ok(65536, 2, 1), "bad name:" + ok(65536, 2, 1)[2:],
	} {
		if _, err := ParseUsers([]byte(bad), rand.Reader); !errors.Is(err, ErrUsersFile) {
			t.Errorf("%q: %v, want ErrUsersFile", bad, err)
		}
	}
	for _, name := range []string{"", "a:b", "a b", "tab\t", "\x1b[31m", strings.Repeat("n", 65)} {
		if _, err := HashLine(rand.Reader, name, []byte("pw")); !errors.Is(err, ErrUserName) {
			t.Errorf("name %q: %v", name, err)
		}
	}
	// SetUser replaces a user's line and keeps the others.
	data := SetUser(SetUser(nil, "a", "a:1"), "b", "b:2")
	if got := string(SetUser(data, "a", "a:3")); got != "b:2\na:3\n" && got != "a:3\nb:2\n" {
		t.Fatalf("SetUser: %q", got)
	}
}

// TestCheckListen is the network rule.
func TestCheckListen(t *testing.T) {
	for _, c := range []struct {
		addr                string
		tls, auth, insecure bool
		ok                  bool
	}{
		{"127.0.0.1:0", false, false, false, true},
		{"127.0.0.2:8080", false, false, false, true},
		{"[::1]:0", false, false, false, true},
		{"localhost:0", false, false, false, true},
		{"0.0.0.0:0", false, false, false, false},
		{":8080", false, false, false, false},
		{"[::]:0", false, false, false, false},
		{"192.168.1.5:80", true, false, false, false},
		{"192.168.1.5:80", false, true, false, false},
		{"192.168.1.5:80", true, true, false, true},
		{"example.com:443", true, true, false, true},
		{"example.com:443", false, false, false, false},
		{"0.0.0.0:0", false, false, true, true},
	} {
		err := CheckListen(c.addr, c.tls, c.auth, c.insecure)
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, ErrInsecureListen)) {
			t.Errorf("%+v: %v", c, err)
		}
	}
	if err := CheckListen("no-port", false, false, false); err == nil || errors.Is(err, ErrInsecureListen) {
		t.Errorf("no port: %v", err)
	}
}
