package serve

import (
	"bytes"
	"crypto/rand"
	"encoding/xml"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestMethods drives every method a WebDAV client uses through the door
// and checks what it did through the library door (the vault package).
func TestMethods(t *testing.T) {
	s := start(t, Options{}, nil)
	data := make([]byte, 70_000) // several 16 KiB chunks
	rand.Read(data)

	s.want(t, http.StatusCreated, "MKCOL", "/d", "")
	s.want(t, http.StatusMethodNotAllowed, "MKCOL", "/d", "")
	s.want(t, http.StatusConflict, "MKCOL", "/missing/d", "")
	s.want(t, http.StatusCreated, "PUT", "/d/f.bin", string(data))
	if got, err := s.v.ReadFile("d/f.bin"); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("vault read after PUT: %v, equal %v", err, bytes.Equal(got, data))
	}
	_, got := s.want(t, http.StatusOK, "GET", "/d/f.bin", "")
	if got != string(data) {
		t.Fatal("GET: wrong content")
	}
	for _, r := range [][2]int{{0, 0}, {16383, 16384}, {16384, 40000}, {69_990, 69_999}} {
		resp, part := s.want(t, http.StatusPartialContent, "GET", "/d/f.bin", "", "Range", fmt.Sprintf("bytes=%d-%d", r[0], r[1]))
		if part != string(data[r[0]:r[1]+1]) {
			t.Fatalf("Range %v: wrong bytes", r)
		}
		if cr := resp.Header.Get("Content-Range"); cr != fmt.Sprintf("bytes %d-%d/%d", r[0], r[1], len(data)) {
			t.Fatalf("Range %v: Content-Range %q", r, cr)
		}
	}
	s.want(t, http.StatusRequestedRangeNotSatisfiable, "GET", "/d/f.bin", "", "Range", "bytes=80000-")
	s.want(t, http.StatusNotFound, "GET", "/nope", "")
	s.want(t, http.StatusMethodNotAllowed, "GET", "/d", "")

	// PROPFIND: the names, sizes and types a client lists.
	_, body := s.want(t, http.StatusMultiStatus, "PROPFIND", "/d/", "", "Depth", "1")
	ms := parseMultistatus(t, body)
	if len(ms) != 2 || ms["/d/f.bin"].size != "70000" || !ms["/d/"].collection {
		t.Fatalf("PROPFIND /d/: %+v\n%s", ms, body)
	}
	resp, _ := s.want(t, http.StatusOK, "HEAD", "/d/f.bin", "")
	if etag := resp.Header.Get("ETag"); etag == "" || ms["/d/f.bin"].etag != etag {
		t.Fatalf("ETag of GET %q, of PROPFIND %q", etag, ms["/d/f.bin"].etag)
	}

	s.want(t, http.StatusCreated, "COPY", "/d", "", "Destination", s.url+"/e")
	s.want(t, http.StatusPreconditionFailed, "COPY", "/d", "", "Destination", s.url+"/e", "Overwrite", "F")
	s.want(t, http.StatusForbidden, "COPY", "/d", "", "Destination", s.url+"/d/inner")
	s.want(t, http.StatusCreated, "MOVE", "/e/f.bin", "", "Destination", s.url+"/moved.bin")
	if got, err := s.v.ReadFile("moved.bin"); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("vault read after COPY+MOVE: %v", err)
	}
	if _, err := s.v.Stat("e/f.bin"); !os.IsNotExist(err) {
		t.Fatalf("MOVE left the source: %v", err)
	}
	s.want(t, http.StatusNoContent, "MOVE", "/moved.bin", "", "Destination", s.url+"/d/f.bin")
	s.want(t, http.StatusNoContent, "DELETE", "/d", "")
	s.want(t, http.StatusNotFound, "DELETE", "/d", "")
	if ents, err := s.v.ReadDir(""); err != nil || len(ents) != 1 || ents[0].Name() != "e" {
		t.Fatalf("root after DELETE: %v %v", ents, err)
	}
	s.want(t, http.StatusMethodNotAllowed, "TRACE", "/", "")
	// Depth: infinity, said or meant by no Depth header, is refused.
	for _, depth := range []string{"infinity", ""} {
		_, body := s.want(t, http.StatusForbidden, "PROPFIND", "/", "", "Depth", depth)
		if !strings.Contains(body, "propfind-finite-depth") {
			t.Fatalf("Depth %q: %s", depth, body)
		}
	}
}

// TestLock takes a write lock as Finder and Explorer do: a PUT without
// its token is refused while it is held.
func TestLock(t *testing.T) {
	s := start(t, Options{}, nil)
	s.want(t, http.StatusCreated, "PUT", "/l.txt", "one")
	lockBody := `<?xml version="1.0" encoding="utf-8"?><D:lockinfo xmlns:D="DAV:"><D:lockscope><D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype><D:owner>test</D:owner></D:lockinfo>`
	resp, _ := s.want(t, http.StatusOK, "LOCK", "/l.txt", lockBody, "Timeout", "Second-60")
	token := resp.Header.Get("Lock-Token")
	if token == "" {
		t.Fatal("LOCK: no Lock-Token")
	}
	s.want(t, http.StatusLocked, "PUT", "/l.txt", "two")
	s.want(t, http.StatusLocked, "LOCK", "/l.txt", lockBody)
	s.want(t, http.StatusCreated, "PUT", "/l.txt", "three", "If", "("+token+")")
	s.want(t, http.StatusNoContent, "UNLOCK", "/l.txt", "", "Lock-Token", token)
	s.want(t, http.StatusCreated, "PUT", "/l.txt", "four")
	if got, _ := s.v.ReadFile("l.txt"); string(got) != "four" {
		t.Fatalf("content %q", got)
	}
}

// TestTraversal sends paths that name something outside the vault, raw
// and percent-encoded, as the request path and as a Destination: every
// one is refused, nothing outside is read or written.
func TestTraversal(t *testing.T) {
	s := start(t, Options{}, nil)
	const secret = "TOPSECRET-outside-the-vault"
	if err := os.WriteFile(filepath.Join(s.root, "secret.txt"), []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	s.want(t, http.StatusCreated, "PUT", "/in.txt", "inside")
	before := listDir(t, s.root)
	for _, target := range []string{
		"/../secret.txt", "/../../secret.txt", "/%2e%2e/secret.txt", "/%2E%2E/%2e%2E/secret.txt",
		"/..%2fsecret.txt", "/in.txt/../../secret.txt", "/..%5csecret.txt", `/..\secret.txt`,
		"/%5c..%5csecret.txt", "/in.txt%00", "/in.txt%00.jpg", "/./in.txt", "/%2e/in.txt", "..", "/c/../secret.txt",
	} {
		for _, method := range []string{"GET", "PROPFIND", "PUT", "MKCOL", "DELETE"} {
			status, body := s.raw(t, method, target)
			if status != http.StatusBadRequest {
				t.Errorf("%s %s: %d, want 400", method, target, status)
			}
			if strings.Contains(body, secret) {
				t.Errorf("%s %s: the body holds the outside file", method, target)
			}
		}
	}
	for _, dst := range []string{"/../copied.txt", "/%2e%2e/copied.txt", s.url + "/../copied.txt", s.url + "/%2e%2e/copied.txt", "/..%2fcopied.txt", `/..\copied.txt`, "/x%00"} {
		for _, method := range []string{"COPY", "MOVE"} {
			if status, _ := s.raw(t, method, "/in.txt", "Destination", dst); status != http.StatusBadRequest {
				t.Errorf("%s /in.txt to %s: %d, want 400", method, dst, status)
			}
		}
	}
	if after := listDir(t, s.root); !slices.Equal(before, after) {
		t.Fatalf("outside the vault changed: %v, then %v", before, after)
	}
	if got, err := s.v.ReadFile("in.txt"); err != nil || string(got) != "inside" {
		t.Fatalf("in.txt: %q %v", got, err)
	}
	// The refusals are not a refusal of everything: the same server
	// serves the file by its own name.
	if status, body := s.raw(t, "GET", "/in.txt"); status != http.StatusOK || body != "inside" {
		t.Fatalf("GET /in.txt: %d %q", status, body)
	}
}

// listDir lists dir's entries, recursively, with their sizes.
func listDir(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		info, _ := d.Info()
		out = append(out, fmt.Sprintf("%s %d", p, info.Size()))
		return nil
	})
	return out
}

// TestNoEncryptedNames: no response carries a name of CIPHERDIR, even
// with an entry there that does not decrypt.
func TestNoEncryptedNames(t *testing.T) {
	s := start(t, Options{}, nil)
	s.want(t, http.StatusCreated, "MKCOL", "/dir", "")
	s.want(t, http.StatusCreated, "PUT", "/dir/a.txt", "a")
	s.want(t, http.StatusCreated, "PUT", "/"+strings.Repeat("long", 50), "long name")
	if err := os.WriteFile(filepath.Join(s.cipher, "planted-not-a-name"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	var bodies []string
	for _, req := range [][]string{
		{"PROPFIND", "/", "Depth", "0"}, {"PROPFIND", "/", "Depth", "1"}, {"PROPFIND", "/dir/", "Depth", "1"},
		{"GET", "/planted-not-a-name"}, {"DELETE", "/dir/missing"}, {"PROPFIND", "/missing"},
		{"MOVE", "/dir", "Destination", s.url + "/nodir/x"},
	} {
		_, b := s.do(t, req[0], req[1], "", req[2:]...)
		bodies = append(bodies, b)
	}
	all := strings.Join(bodies, "\n")
	if !strings.Contains(all, "a.txt") || !strings.Contains(all, strings.Repeat("long", 50)) {
		t.Fatalf("the listing lacks the plaintext names:\n%s", all)
	}
	n := 0
	filepath.WalkDir(s.cipher, func(p string, d os.DirEntry, err error) error {
		if err != nil || p == s.cipher {
			return err
		}
		n++
		if strings.Contains(all, d.Name()) {
			t.Errorf("a response holds the backing name %s", d.Name())
		}
		return nil
	})
	if n < 5 {
		t.Fatalf("only %d backing entries: the check saw nothing", n)
	}
}

// TestCorruptIsServerError: a file whose ciphertext was changed is a
// 500, not a 404 or a 200 with wrong bytes.
func TestCorruptIsServerError(t *testing.T) {
	s := start(t, Options{}, nil)
	data := bytes.Repeat([]byte("0123456789"), 5000)
	s.want(t, http.StatusCreated, "PUT", "/f", string(data))
	flipped := 0
	filepath.WalkDir(s.cipher, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		if info, _ := d.Info(); info.Size() > int64(len(data)) {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			b[200] ^= 1
			if err := os.WriteFile(p, b, 0o600); err != nil {
				t.Fatal(err)
			}
			flipped++
		}
		return nil
	})
	if flipped != 1 {
		t.Fatalf("flipped %d files", flipped)
	}
	s.want(t, http.StatusInternalServerError, "GET", "/f", "")
	logs := strings.Join(s.logs.wait(t, "the GET", func(l []string) bool { return len(l) >= 2 }), "\n")
	if !strings.Contains(logs, `GET "/f" 500`) || !strings.Contains(logs, "error=corrupt") {
		t.Fatalf("log:\n%s", logs)
	}
}

// TestReadOnly refuses every write with 403 and still reads.
func TestReadOnly(t *testing.T) {
	s := start(t, Options{ReadOnly: true}, nil)
	if err := s.v.WriteFile("r.txt", []byte("r"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"PUT", "DELETE", "MKCOL", "PROPPATCH", "LOCK"} {
		s.want(t, http.StatusForbidden, m, "/r.txt", "")
	}
	s.want(t, http.StatusForbidden, "COPY", "/r.txt", "", "Destination", s.url+"/c.txt")
	s.want(t, http.StatusForbidden, "MOVE", "/r.txt", "", "Destination", s.url+"/c.txt")
	s.want(t, http.StatusOK, "GET", "/r.txt", "")
	s.want(t, http.StatusMultiStatus, "PROPFIND", "/", "", "Depth", "1")
	if ents, _ := s.v.ReadDir(""); len(ents) != 1 {
		t.Fatalf("read-only server changed the vault: %v", ents)
	}
}

// TestBounds: XML bodies beyond maxXMLBody and headers beyond
// maxHeaderBytes are refused.
func TestBounds(t *testing.T) {
	s := start(t, Options{}, nil)
	big := `<?xml version="1.0"?><D:propfind xmlns:D="DAV:"><D:prop>` + strings.Repeat("<D:displayname/>", maxXMLBody/16+1) + `</D:prop></D:propfind>`
	resp, _ := s.do(t, "PROPFIND", "/", big, "Depth", "0")
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("PROPFIND with a %d-byte body: %d", len(big), resp.StatusCode)
	}
	small := `<?xml version="1.0"?><D:propfind xmlns:D="DAV:"><D:prop><D:displayname/></D:prop></D:propfind>`
	s.want(t, http.StatusMultiStatus, "PROPFIND", "/", small, "Depth", "0")
	resp, _ = s.do(t, "GET", "/", "", "X-Big", strings.Repeat("x", 2*maxHeaderBytes))
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("a %d-byte header: %d", 2*maxHeaderBytes, resp.StatusCode)
	}
}

type davProps struct {
	size, etag string
	collection bool
}

// parseMultistatus maps each href of a PROPFIND answer to its props.
func parseMultistatus(t *testing.T, body string) map[string]davProps {
	t.Helper()
	var ms struct {
		Responses []struct {
			Href     string `xml:"href"`
			Propstat []struct {
				Prop struct {
					Length string `xml:"getcontentlength"`
					ETag   string `xml:"getetag"`
					Type   struct {
						Collection *struct{} `xml:"collection"`
					} `xml:"resourcetype"`
				} `xml:"prop"`
			} `xml:"propstat"`
		} `xml:"response"`
	}
	if err := xml.Unmarshal([]byte(body), &ms); err != nil {
		t.Fatalf("%v\n%s", err, body)
	}
	out := map[string]davProps{}
	for _, r := range ms.Responses {
		var p davProps
		for _, ps := range r.Propstat {
			if ps.Prop.Length != "" {
				p.size = ps.Prop.Length
			}
			if ps.Prop.ETag != "" {
				p.etag = ps.Prop.ETag
			}
			p.collection = p.collection || ps.Prop.Type.Collection != nil
		}
		out[r.Href] = p
	}
	return out
}
