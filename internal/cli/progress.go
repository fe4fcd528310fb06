package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progress reports how far a long command (fsck, export, import) is: a bar
// with files, bytes, rate and ETA when stderr is a terminal, one JSON
// object per line on stderr with --json (stdout keeps the command's own
// output), and nothing otherwise. A nil *progress reports nothing.
type progress struct {
	op    string
	bar   *progressbar.ProgressBar
	json  *json.Encoder
	start time.Time
	last  time.Time // of the last JSON line

	files, totalFiles, bytes, totalBytes int64
}

// progressLine is one --json progress line.
type progressLine struct {
	Op         string `json:"op"`
	Files      int64  `json:"files"`
	TotalFiles int64  `json:"total_files"`
	Bytes      int64  `json:"bytes"`
	TotalBytes int64  `json:"total_bytes"`
	ElapsedMS  int64  `json:"elapsed_ms"`
	Done       bool   `json:"done"`
}

// progressEvery bounds how often a JSON line is written; the first and the
// last (done) are always written.
const progressEvery = 200 * time.Millisecond

// newProgress returns op's reporter, or nil when there is nothing to show.
func (a *App) newProgress(op string, asJSON bool) *progress {
	p := &progress{op: op, start: time.Now()}
	switch {
	case asJSON:
		p.json = json.NewEncoder(a.Stderr)
	case isTerminal(a.Stderr):
		p.bar = progressbar.NewOptions64(-1,
			progressbar.OptionSetWriter(a.Stderr),
			progressbar.OptionSetDescription(op+":"),
			progressbar.OptionShowBytes(true),
			progressbar.OptionShowCount(),
			progressbar.OptionUseIECUnits(true),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionSetElapsedTime(true),
			progressbar.OptionSetWidth(24),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionUseANSICodes(true),
			progressbar.OptionClearOnFinish(),
		)
	default:
		return nil
	}
	return p
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// setTotals sets what the whole run will do (from a scan before it).
func (p *progress) setTotals(files, bytes int64) {
	if p == nil {
		return
	}
	p.totalFiles, p.totalBytes = files, bytes
	if p.bar != nil {
		p.bar.Describe(p.describe())
		p.bar.ChangeMax64(max(bytes, 1))
	}
	p.update(true)
}

// set reports absolute counts (fsck's callback).
func (p *progress) set(files, bytes int64) {
	if p == nil {
		return
	}
	p.files, p.bytes = files, bytes
	p.update(false)
}

// addBytes counts bytes of the file being copied.
func (p *progress) addBytes(n int64) {
	if p == nil {
		return
	}
	p.bytes += n
	p.update(false)
}

// fileDone counts one finished file.
func (p *progress) fileDone() {
	if p == nil {
		return
	}
	p.files++
	p.update(false)
}

// interrupt clears the bar before another line is printed on stderr; the
// next update draws it again.
func (p *progress) interrupt() {
	if p != nil && p.bar != nil {
		p.bar.Clear()
	}
}

// finish writes the last JSON line or removes the bar.
func (p *progress) finish() {
	if p == nil {
		return
	}
	if p.bar != nil {
		p.bar.Finish()
		return
	}
	p.writeJSON(true)
}

func (p *progress) update(force bool) {
	if p.bar != nil {
		p.bar.Describe(p.describe())
		p.bar.Set64(p.bytes)
		return
	}
	if now := time.Now(); force || now.Sub(p.last) >= progressEvery {
		p.last = now
		p.writeJSON(false)
	}
}

// describe is the bar's label: "export: 3/10 files".
func (p *progress) describe() string {
	return fmt.Sprintf("%s: %d/%d files", p.op, p.files, p.totalFiles)
}

func (p *progress) writeJSON(done bool) {
	p.json.Encode(progressLine{
		Op: p.op, Files: p.files, TotalFiles: p.totalFiles, Bytes: p.bytes, TotalBytes: p.totalBytes,
		ElapsedMS: time.Since(p.start).Milliseconds(), Done: done,
	})
}

// countingWriter counts what is written through it into a progress.
type countingWriter struct {
	w io.Writer
	p *progress
}

func (c countingWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.p.addBytes(int64(n))
	return n, err
}

// progressWriter wraps w to count into p (w itself when p is nil).
func progressWriter(w io.Writer, p *progress) io.Writer {
	if p == nil {
		return w
	}
	return countingWriter{w, p}
}
