package serve

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
)

// errBadPath refuses a request path or Destination a vault path cannot
// be: a "." or ".." segment (also percent-encoded: the path is checked
// after decoding), a backslash, a NUL, an encoded slash.
var errBadPath = errors.New("serve: path refused")

// checkRequestPaths checks the request's path and, for COPY and MOVE,
// its Destination, before x/net/webdav sees them. The vault cleans paths
// beneath its root in any case; refusing instead of cleaning means a
// client never gets a resource it did not name.
func checkRequestPaths(r *http.Request) error {
	if err := checkURLPath(r.URL); err != nil {
		return err
	}
	if dst := r.Header.Get("Destination"); dst != "" {
		u, err := url.Parse(dst)
		if err != nil {
			return errBadPath
		}
		if err := checkURLPath(u); err != nil {
			return err
		}
	}
	return nil
}

// checkURLPath checks one URL's path, raw and decoded.
func checkURLPath(u *url.URL) error {
	raw := strings.ToLower(u.EscapedPath())
	for _, enc := range []string{"%2f", "%5c", "%00"} {
		if strings.Contains(raw, enc) {
			return errBadPath
		}
	}
	return checkPath(u.Path)
}

// checkPath checks a decoded, slash-separated path.
func checkPath(p string) error {
	if !strings.HasPrefix(p, "/") || strings.ContainsAny(p, "\\\x00") {
		return errBadPath
	}
	for seg := range strings.SplitSeq(p[1:], "/") {
		if seg == "." || seg == ".." {
			return errBadPath
		}
	}
	return nil
}
