// Package serve is the WebDAV door of a vault (encryptfs serve webdav):
// x/net/webdav's Handler over the vault package, the engine the mount
// uses, with the refusals a network door needs (paths, body sizes,
// authentication) and one log line a request. Errors become HTTP status
// codes here and nowhere else.
package serve

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/encryptfs/encryptfs/vault"
	"golang.org/x/net/webdav"
)

// Bounds of what a client may send. PUT bodies are files, unbounded; the
// XML bodies x/net/webdav parses (PROPFIND, PROPPATCH, LOCK) are not.
const (
	maxXMLBody        = 1 << 20
	maxHeaderBytes    = 64 << 10
	readHeaderTimeout = 10 * time.Second
	idleTimeout       = 2 * time.Minute
)

// Options configure the handler.
type Options struct {
	Vault    *vault.Vault
	ReadOnly bool
	// Auth checks every request; nil: none (a loopback listener, or
	// one started with the explicit insecure flag).
	Auth Authenticator
	// Log gets one line a request (no credentials); nil: none.
	Log func(line string)
	// LogPaths puts the plaintext paths of every request in its log
	// line; without it only a request that failed on the server's side
	// (5xx) names its path, as the mount logs the path of an EIO.
	LogPaths bool
}

// handler is the WebDAV door: checks, then x/net/webdav.
type handler struct {
	o   Options
	fs  *vaultFS
	dav *webdav.Handler
}

// NewHandler returns the WebDAV handler of o.Vault.
func NewHandler(o Options) http.Handler {
	fsys := &vaultFS{v: o.Vault, readOnly: o.ReadOnly}
	return &handler{o: o, fs: fsys, dav: &webdav.Handler{FileSystem: fsys, LockSystem: webdav.NewMemLS()}}
}

// writeMethods change the vault; a read-only server refuses them.
var writeMethods = map[string]bool{"PUT": true, "DELETE": true, "MKCOL": true, "COPY": true, "MOVE": true, "PROPPATCH": true, "LOCK": true, "UNLOCK": true, "POST": true}

// knownMethods are the methods served; others get 405.
var knownMethods = map[string]bool{"OPTIONS": true, "GET": true, "HEAD": true, "PROPFIND": true}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := &recorder{ResponseWriter: w}
	user, err := h.serve(rec, r)
	if h.o.Log != nil {
		h.o.Log(logLine(r, rec, user, err, time.Since(start), h.o.LogPaths))
	}
}

// serve answers one request; it returns the user and the error to log.
func (h *handler) serve(w *recorder, r *http.Request) (string, error) {
	user := ""
	if h.o.Auth != nil {
		var ok bool
		if user, ok = h.o.Auth.Authenticate(r); !ok {
			w.Header().Set("WWW-Authenticate", h.o.Auth.Challenge())
			fail(w, http.StatusUnauthorized)
			return "", errUnauthenticated
		}
	}
	if !knownMethods[r.Method] && !writeMethods[r.Method] {
		fail(w, http.StatusMethodNotAllowed)
		return user, nil
	}
	if err := checkRequestPaths(r); err != nil {
		fail(w, http.StatusBadRequest)
		return user, err
	}
	if h.o.ReadOnly && writeMethods[r.Method] {
		fail(w, http.StatusForbidden)
		return user, errReadOnly
	}
	if r.Method == "COPY" || r.Method == "MOVE" {
		if r.Header.Get("Overwrite") == "" {
			// RFC 4918 §10.6: no Overwrite header means "T";
			// x/net/webdav takes it as "F" for MOVE.
			r.Header.Set("Overwrite", "T")
		}
		if dst, err := destinationPath(r); err == nil && inside(r.URL.Path, dst) && r.URL.Path != dst {
			// x/net/webdav would copy a collection into itself until
			// its recursion limit.
			fail(w, http.StatusForbidden)
			return user, errInsideSource
		}
	}
	if r.Method == "PROPFIND" && r.Header.Get("Depth") != "0" && r.Header.Get("Depth") != "1" {
		// Depth: infinity (also what no Depth header means) would walk
		// the whole vault for one request; RFC 4918 §9.1 lets a server
		// refuse it, as Apache's mod_dav does by default.
		w.Header().Set("Content-Type", "application/xml; charset=utf-8")
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprint(w, `<?xml version="1.0" encoding="utf-8"?>`+"\n"+`<D:error xmlns:D="DAV:"><D:propfind-finite-depth/></D:error>`)
		return user, errInfiniteDepth
	}
	if r.Method != "PUT" {
		r.Body = http.MaxBytesReader(w, r.Body, maxXMLBody)
	}
	switch r.Method {
	case "GET", "HEAD":
		return user, h.get(w, r)
	}
	var davErr error
	dav := *h.dav // shares the lock system; the Logger is this request's
	dav.Logger = func(_ *http.Request, err error) { davErr = err }
	if r.Method == "PROPFIND" {
		r = r.WithContext(withListMemo(r.Context()))
	}
	dav.ServeHTTP(w, r)
	return user, davErr
}

// errInsideSource refuses a COPY or MOVE of a collection into itself.
var errInsideSource = errors.New("serve: destination inside the source")

// errInfiniteDepth refuses a PROPFIND of Depth: infinity.
var errInfiniteDepth = errors.New("serve: PROPFIND of infinite depth")

// errUnauthenticated is a request without valid credentials (401).
var errUnauthenticated = errors.New("not authenticated")

// destinationPath is the path of a COPY or MOVE's Destination.
func destinationPath(r *http.Request) (string, error) {
	u, err := r.URL.Parse(r.Header.Get("Destination"))
	if err != nil {
		return "", err
	}
	return u.Path, nil
}

// get answers GET and HEAD: a file with Range support (http.ServeContent)
// and the ETag PROPFIND gives. A collection is 405, as x/net/webdav has
// it. The first byte is read before the status is sent, so that a file
// whose start fails authentication is a 500, not a 200 cut short (a
// later chunk that fails cuts the body short of its Content-Length).
func (h *handler) get(w http.ResponseWriter, r *http.Request) error {
	fi, err := h.fs.stat(r.URL.Path)
	if err != nil {
		fail(w, statusOf(err))
		return err
	}
	if fi.IsDir() {
		fail(w, http.StatusMethodNotAllowed)
		return nil
	}
	f, err := h.fs.OpenFile(r.Context(), r.URL.Path, 0, 0)
	if err != nil {
		fail(w, statusOf(err))
		return err
	}
	defer f.Close()
	vf, ok := f.(*file)
	if !ok { // it became a directory since the Stat
		fail(w, http.StatusMethodNotAllowed)
		return nil
	}
	if fi.Size() > 0 {
		if _, err := vf.ReadAt(make([]byte, 1), 0); err != nil {
			fail(w, statusOf(err))
			return err
		}
	}
	w.Header().Set("ETag", fmt.Sprintf(`"%x%x"`, fi.ModTime().UnixNano(), fi.Size()))
	http.ServeContent(w, r, fi.Name(), fi.ModTime(), vf)
	return nil
}

// fail answers with status and its text only: no error text, which
// could carry CIPHERDIR's names.
func fail(w http.ResponseWriter, status int) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	fmt.Fprintln(w, http.StatusText(status))
}

// NewServer is the http.Server of handler h: bounded headers, a
// deadline for them, idle connections closed. tlsConfig nil: plain HTTP.
func NewServer(h http.Handler, tlsConfig *tls.Config) *http.Server {
	return &http.Server{
		Handler:           h,
		TLSConfig:         tlsConfig,
		MaxHeaderBytes:    maxHeaderBytes,
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       idleTimeout,
	}
}

// ErrInsecureListen refuses a listener beyond loopback without TLS and
// authentication.
var ErrInsecureListen = errors.New("serve: a listen address beyond loopback needs TLS (--cert, --key) and authentication (--users or --token-file)")

// CheckListen applies the network rule: a loopback address may serve
// anything; another needs TLS and authentication, unless insecure (the
// explicit --insecure-no-tls-no-auth).
func CheckListen(addr string, tls, auth, insecure bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("serve: listen address %q: %w", addr, err)
	}
	if IsLoopback(host) || insecure || (tls && auth) {
		return nil
	}
	return ErrInsecureListen
}

// IsLoopback tells whether host names only this machine: "localhost", or
// an IP address of the loopback range. Any other name, and the empty
// host (every interface), is not.
func IsLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}
