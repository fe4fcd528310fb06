package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// progressTree writes a plaintext tree of four files (one empty, one in a
// subdirectory) and returns it with its byte count.
func progressTree(t *testing.T) (string, int64) {
	t.Helper()
	src := t.TempDir()
	must(t, os.Mkdir(filepath.Join(src, "sub"), 0o755))
	var total int64
	for name, size := range map[string]int{"empty": 0, "small": 5000, "big": 300 << 10, "sub/f": 17} {
		must(t, os.WriteFile(filepath.Join(src, name), bytes.Repeat([]byte("x"), size), 0o644))
		total += int64(size)
	}
	return src, total
}

// progressLines parses stderr's JSON lines (other lines are messages).
func progressLines(t *testing.T, stderr string) []progressLine {
	t.Helper()
	var lines []progressLine
	for _, l := range strings.Split(strings.TrimSpace(stderr), "\n") {
		if !strings.HasPrefix(l, "{") {
			continue
		}
		var p progressLine
		dec := json.NewDecoder(strings.NewReader(l))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("progress line %q: %v", l, err)
		}
		lines = append(lines, p)
	}
	if len(lines) == 0 {
		t.Fatalf("no progress lines in stderr:\n%s", stderr)
	}
	return lines
}

// checkDone checks the last line counts everything, and no line counts
// more than the totals.
func checkDone(t *testing.T, lines []progressLine, op string, files, bytes int64) {
	t.Helper()
	last := lines[len(lines)-1]
	if !last.Done || last.Op != op || last.Files != files || last.Bytes != bytes || last.TotalFiles != files || last.TotalBytes != bytes {
		t.Errorf("last %s progress line %+v, want %d files, %d bytes", op, last, files, bytes)
	}
	for _, l := range lines[:len(lines)-1] {
		if l.Done || l.Files > files || l.Bytes > bytes {
			t.Errorf("progress line %+v before the end", l)
		}
	}
}

// TestJSONProgress: import, export and fsck with --json write one JSON
// object per line on stderr; the last one counts what was done.
func TestJSONProgress(t *testing.T) {
	dir, _ := newVault(t, "pw")
	pf := writePassfile(t, "pw")
	src, total := progressTree(t)
	r := run(t, "", "import", "--json", "--passfile", pf, dir, src)
	r.want(t, 0)
	checkDone(t, progressLines(t, r.stderr), "import", 4, total)

	dest := filepath.Join(t.TempDir(), "out")
	r = run(t, "", "export", "--json", "--passfile", pf, dir, dest)
	r.want(t, 0)
	checkDone(t, progressLines(t, r.stderr), "export", 4, total)
	if !strings.Contains(r.stderr, "exported 4 files, 2 directories") {
		t.Errorf("stderr:\n%s", r.stderr)
	}

	r = run(t, "", "fsck", "--json", "--passfile", pf, dir)
	r.want(t, 0)
	lines := progressLines(t, r.stderr)
	if last := lines[len(lines)-1]; !last.Done || last.Op != "fsck" || last.TotalFiles != 4 || last.TotalBytes != total {
		t.Errorf("last fsck progress line %+v", last)
	}
	var rep map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Errorf("fsck --json report: %v\n%s", err, r.stdout)
	}
}

// TestNoProgressWithoutTTY: without --json and with stderr not a
// terminal, nothing but the usual messages reaches stderr.
func TestNoProgressWithoutTTY(t *testing.T) {
	dir, _ := newVault(t, "pw")
	pf := writePassfile(t, "pw")
	src, _ := progressTree(t)
	r := run(t, "", "import", "--passfile", pf, dir, src)
	r.want(t, 0)
	if r.stderr != "imported 4 files, 1 directory, 0 symlinks\n" {
		t.Errorf("import stderr %q", r.stderr)
	}
	r = run(t, "", "export", "--passfile", pf, dir, filepath.Join(t.TempDir(), "out"))
	r.want(t, 0)
	if strings.Count(r.stderr, "\n") != 1 || strings.ContainsAny(r.stderr, "\r{\x1b") {
		t.Errorf("export stderr %q", r.stderr)
	}
	r = run(t, "", "fsck", "--passfile", pf, dir)
	r.want(t, 0)
	if r.stderr != "" {
		t.Errorf("fsck stderr %q", r.stderr)
	}
}

// TestProgressBarOnTTY: with stderr on a terminal, export draws a bar with
// the file count and clears it at the end.
func TestProgressBarOnTTY(t *testing.T) {
	dir, _ := newVault(t, "pw")
	pf := writePassfile(t, "pw")
	src, _ := progressTree(t)
	run(t, "", "import", "--passfile", pf, dir, src).want(t, 0)
	master, tty := openPTY(t)
	var drawn bytes.Buffer
	done := make(chan struct{})
	go func() {
		io.Copy(&drawn, master)
		close(done)
	}()
	cmd := exec.Command(binary, "export", "--passfile", pf, dir, filepath.Join(t.TempDir(), "out"))
	cmd.Stderr = tty
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		master.Close()
		<-done
	}
	out := drawn.String()
	if !strings.Contains(out, "export: ") || !strings.Contains(out, "/4 files") || !strings.Contains(out, "exported 4 files") {
		t.Errorf("terminal output %q", out)
	}
}
