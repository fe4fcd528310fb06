package serve

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestDeadProps: PROPPATCH sets and removes a dead property, which moves
// with its file and is stored encrypted: its value is in no backing name,
// file or xattr.
func TestDeadProps(t *testing.T) {
	s := start(t, Options{}, nil)
	const value = "PLAINTEXT-PROPERTY-VALUE"
	s.want(t, http.StatusCreated, "PUT", "/f", "f")
	set := `<?xml version="1.0" encoding="utf-8"?><D:propertyupdate xmlns:D="DAV:" xmlns:Z="urn:test"><D:set><D:prop><Z:note>` + value + `</Z:note></D:prop></D:set></D:propertyupdate>`
	_, body := s.want(t, http.StatusMultiStatus, "PROPPATCH", "/f", set)
	if !strings.Contains(body, "200 OK") {
		t.Fatalf("PROPPATCH: %s", body)
	}
	s.want(t, http.StatusCreated, "MOVE", "/f", "", "Destination", s.url+"/g")
	get := `<?xml version="1.0" encoding="utf-8"?><D:propfind xmlns:D="DAV:" xmlns:Z="urn:test"><D:prop><Z:note/></D:prop></D:propfind>`
	if _, body := s.want(t, http.StatusMultiStatus, "PROPFIND", "/g", get, "Depth", "0"); !strings.Contains(body, value) {
		t.Fatalf("PROPFIND after MOVE lacks the property: %s", body)
	}
	// Nothing in CIPHERDIR holds the value in plaintext.
	xattrs := 0
	filepath.WalkDir(s.cipher, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(d.Name(), value) {
			t.Errorf("backing name %s", d.Name())
		}
		if d.Type().IsRegular() {
			if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(value)) {
				t.Errorf("backing file %s holds the value", p)
			}
		}
		buf := make([]byte, 64<<10)
		n, _ := unix.Llistxattr(p, buf)
		for name := range strings.SplitSeq(string(buf[:n]), "\x00") {
			if name == "" {
				continue
			}
			xattrs++
			v := make([]byte, 64<<10)
			m, _ := unix.Lgetxattr(p, name, v)
			if m > 0 && bytes.Contains(v[:m], []byte(value)) {
				t.Errorf("xattr %s of %s holds the value", name, p)
			}
		}
		return nil
	})
	if xattrs == 0 {
		t.Fatal("no xattr in CIPHERDIR: where did the property go?")
	}
	remove := `<?xml version="1.0" encoding="utf-8"?><D:propertyupdate xmlns:D="DAV:" xmlns:Z="urn:test"><D:remove><D:prop><Z:note/></D:prop></D:remove></D:propertyupdate>`
	s.want(t, http.StatusMultiStatus, "PROPPATCH", "/g", remove)
	if _, body := s.want(t, http.StatusMultiStatus, "PROPFIND", "/g", get, "Depth", "0"); strings.Contains(body, value) || !strings.Contains(body, "404") {
		t.Fatalf("PROPFIND after remove: %s", body)
	}
	// A collection takes dead properties too.
	s.want(t, http.StatusCreated, "MKCOL", "/dir", "")
	s.want(t, http.StatusMultiStatus, "PROPPATCH", "/dir", set)
	if _, body := s.want(t, http.StatusMultiStatus, "PROPFIND", "/dir", get, "Depth", "0"); !strings.Contains(body, value) {
		t.Fatalf("collection: %s", body)
	}
}
