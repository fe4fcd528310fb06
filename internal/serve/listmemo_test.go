package serve

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// TestListingMemo: a PROPFIND of Depth 1, which answers from the listing
// and the files already open (listMemo), gives each entry exactly the
// response a PROPFIND of Depth 0 of it gives, with the content types
// x/net/webdav would give (by extension, else sniffed) and dead
// properties included.
func TestListingMemo(t *testing.T) {
	s := start(t, Options{}, nil)
	s.want(t, http.StatusCreated, "MKCOL", "/d/", "")
	s.want(t, http.StatusCreated, "MKCOL", "/d/sub/", "")
	files := map[string]struct{ body, ctype string }{
		"/d/a.txt":  {"hello", "text/plain; charset=utf-8"},
		"/d/page":   {"<html><body>x</body></html>", "text/html; charset=utf-8"},
		"/d/binary": {"\x00\x01\x02\xff", "application/octet-stream"},
		"/d/empty":  {"", "text/plain; charset=utf-8"},
	}
	for name, f := range files {
		s.want(t, http.StatusCreated, "PUT", name, f.body)
	}
	set := `<?xml version="1.0" encoding="utf-8"?><D:propertyupdate xmlns:D="DAV:" xmlns:Z="urn:test"><D:set><D:prop><Z:note>dead-value</Z:note></D:prop></D:set></D:propertyupdate>`
	s.want(t, http.StatusMultiStatus, "PROPPATCH", "/d/page", set)

	_, body := s.want(t, http.StatusMultiStatus, "PROPFIND", "/d/", "", "Depth", "1")
	listed := responses(t, body)
	if len(listed) != 6 {
		t.Fatalf("Depth 1 of /d/: %d responses, want 6:\n%s", len(listed), body)
	}
	for href, resp := range listed {
		_, one := s.want(t, http.StatusMultiStatus, "PROPFIND", href, "", "Depth", "0")
		alone := responses(t, one)
		if props(alone[href]) != props(resp) {
			t.Errorf("%s: Depth 1 gave\n%s\nDepth 0 gives\n%s", href, resp, alone[href])
		}
		if f, ok := files[href]; ok && !strings.Contains(resp, "<D:getcontenttype>"+f.ctype+"</D:getcontenttype>") {
			t.Errorf("%s: content type is not %s:\n%s", href, f.ctype, resp)
		}
	}
	if !strings.Contains(listed["/d/page"], "dead-value") {
		t.Errorf("the dead property is not listed:\n%s", listed["/d/page"])
	}
}

// props is a response's properties in a fixed order (x/net/webdav
// writes them in map order).
func props(resp string) string {
	var out []string
	for _, re := range propREs {
		out = append(out, re.FindString(resp))
	}
	return strings.Join(out, "\n")
}

var propREs = func() []*regexp.Regexp {
	var res []*regexp.Regexp
	for _, n := range []string{"D:resourcetype", "D:displayname", "D:getcontenttype", "D:getcontentlength", "D:getlastmodified", "D:getetag", "D:supportedlock", "note"} {
		res = append(res, regexp.MustCompile(`<`+n+`[ >].*?</`+n+`>`))
	}
	return res
}()

var responseRE = regexp.MustCompile(`<D:response><D:href>([^<]*)</D:href>.*?</D:response>`)

// responses maps each href of a multistatus body to its response.
func responses(t *testing.T, body string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, r := range responseRE.FindAllStringSubmatch(body, -1) {
		m[r[1]] = r[0]
	}
	return m
}
