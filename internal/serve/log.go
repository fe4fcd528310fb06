package serve

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/encryptfs/encryptfs/internal/fault"
)

// recorder keeps the status and size of a response for the log line.
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
	r.ResponseWriter.WriteHeader(status)
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	n, err := r.ResponseWriter.Write(p)
	r.bytes += int64(n)
	return n, err
}

// Flush lets http.ServeContent's writes through as they come.
func (r *recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// logLine is one request on one line: client, user, method, plaintext
// path (and destination) if paths or the server failed (else "-"),
// status, bytes, time, and the kind of the error (never its text, which
// may carry CIPHERDIR's names, and never a header with credentials).
// Paths are quoted: no control character reaches the log raw.
func logLine(r *http.Request, rec *recorder, user string, err error, d time.Duration, paths bool) string {
	status := rec.status
	if status == 0 {
		status = http.StatusOK
	}
	if user == "" {
		user = "-"
	}
	paths = paths || status >= 500
	p := "-"
	if paths {
		p = strconv.Quote(r.URL.Path)
	}
	line := fmt.Sprintf("%s %s %s %s", r.RemoteAddr, strconv.Quote(user), r.Method, p)
	if dst := r.Header.Get("Destination"); dst != "" && paths {
		if u, perr := r.URL.Parse(dst); perr == nil {
			line += fmt.Sprintf(" -> %q", u.Path)
		}
	}
	line += fmt.Sprintf(" %d %dB %s", status, rec.bytes, d.Round(time.Millisecond))
	if err != nil {
		line += " error=" + errKind(err)
	}
	return line
}

// errKind names an error for the log without its text.
func errKind(err error) string {
	switch {
	case err == errBadPath, err == errReadOnly, err == errTooDeep, err == errUnauthenticated, err == errInsideSource, err == errInfiniteDepth:
		return strconv.Quote(err.Error())
	}
	return fault.Of(err).String()
}
