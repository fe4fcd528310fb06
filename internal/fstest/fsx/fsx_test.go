package fsx

import (
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestRunTempDirAgainstTempDir: two plain directories must never diverge.
func TestRunTempDirAgainstTempDir(t *testing.T) {
	for _, seed := range []int64{1} {
		t.Run("seed"+itoa(seed), func(t *testing.T) {
			Run(t, t.TempDir(), t.TempDir(), seed, 1500)
		})
	}
}

// TestRunTmpfsAgainstTempDir: tmpfs as the filesystem under test.
func TestRunTmpfsAgainstTempDir(t *testing.T) {
	Run(t, mountTmpfs(t), t.TempDir(), 42, DefaultOps)
}

// TestDetectsDivergence makes sure the comparison can fail: a reference
// file that is changed behind the worker's back must be reported, with the
// seed and the operation log.
func TestDetectsDivergence(t *testing.T) {
	tests := []struct {
		name   string
		tamper func(p *pair) error
		want   string
	}{
		{"flipped byte", func(p *pair) error { return pwriteFull(p.fds[1], []byte{0}, 3) }, "contents differ at offset 3"},
		{"longer file", func(p *pair) error { return unix.Ftruncate(p.fds[1], 1<<20+1) }, "size differs"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := createPair(t.TempDir(), t.TempDir(), "f", 0)
			if err != nil {
				t.Fatal(err)
			}
			defer p.close()
			w := newWorker(p, 7, Options{}.withDefaults(), region{lo: 0, hi: 1 << 20, resize: true})
			if err := pwriteFull(p.fds[0], []byte("abcdefgh"), 0); err != nil {
				t.Fatal(err)
			}
			if err := pwriteFull(p.fds[1], []byte("abcdefgh"), 0); err != nil {
				t.Fatal(err)
			}
			if err := tc.tamper(p); err != nil {
				t.Fatal(err)
			}
			err = w.run(5)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("run after tampering: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestSameSeedSameOps: a seed replays exactly.
func TestSameSeedSameOps(t *testing.T) {
	reg := region{lo: 0, hi: 4 << 20, resize: true}
	a, b := newGen(99, reg, Options{}.withDefaults(), "f"), newGen(99, reg, Options{}.withDefaults(), "f")
	for i := 1; i <= 500; i++ {
		if x, y := a.next(i, int64(i*1000)), b.next(i, int64(i*1000)); x != y {
			t.Fatalf("op %d differs: %v vs %v", i, x, y)
		}
	}
}

// mountTmpfs mounts a private tmpfs (root only) and unmounts it at cleanup.
func mountTmpfs(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("tmpfs test needs root, and CI must run it")
		}
		t.Skip("skipped: mounting tmpfs needs root")
	}
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=512m"); err != nil {
		t.Fatalf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, 0); err != nil {
			t.Errorf("unmount tmpfs %s: %v", dir, err)
		}
	})
	return dir
}

// TestPattern checks the fast pattern against its definition.
func TestPattern(t *testing.T) {
	for _, n := range []int{0, 1, 250, 251, 252, 1000, 70001} {
		b := make([]byte, n)
		pattern(b, 13, 4095)
		for i, c := range b {
			if want := byte(1 + (13*7+4095+int64(i))%251); c != want {
				t.Fatalf("len %d: byte %d is %d, want %d", n, i, c, want)
			}
		}
	}
}

// TestMultiProcessTmpfsAgainstTempDir: several processes, a shared file.
func TestMultiProcessTmpfsAgainstTempDir(t *testing.T) {
	RunMultiProcess(t, mountTmpfs(t), t.TempDir(), 5, DefaultProcs, 800)
}

// TestMultiProcessTempDirAgainstTmpfs: the real disk under test.
func TestMultiProcessTempDirAgainstTmpfs(t *testing.T) {
	RunMultiProcess(t, t.TempDir(), mountTmpfs(t), 6, 3, 500)
}

// TestRerunInSameDirs: Run cleans up after itself, so a seed can be
// replayed in the same directories (for example on one long-lived mount).
func TestRerunInSameDirs(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	for range 2 {
		t.Run("run", func(t *testing.T) { Run(t, a, b, 3, 100) })
	}
	for _, d := range []string{a, b} {
		if entries, err := os.ReadDir(d); err != nil || len(entries) != 0 {
			t.Errorf("%s after runs: %v, %v", d, entries, err)
		}
	}
}
