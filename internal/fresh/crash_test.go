package fresh_test

import (
	"crypto/rand"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/fresh"
	"github.com/encryptfs/encryptfs/internal/session"
	"github.com/encryptfs/encryptfs/vault"
)

// newVault makes a bound vault in a temp dir; it returns CIPHERDIR and the
// state directory of the device that will write it.
func newVault(t *testing.T) (dir, state string) {
	t.Helper()
	return newVaultWith(t, session.Options{BoundVaultID: vaultID})
}

// newVaultWith is newVault whose session (creation) options are o.
func newVaultWith(t *testing.T, o session.Options) (dir, state string) {
	t.Helper()
	tmp := t.TempDir()
	dir, state = filepath.Join(tmp, "cipher"), filepath.Join(tmp, "state")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	k, err := session.NewKDFParams(rand.Reader, 1, 8192, 1)
	if err != nil {
		t.Fatal(err)
	}
	s, master, err := session.Create(dir, password, session.CreateOptions{
		Params: config.NewParams(string(session.AES256GCM), 4096, k), Options: o})
	if err != nil {
		t.Fatal(err)
	}
	clear(master)
	s.Close()
	return dir, state
}

// logLines collects a writer's log.
type logLines struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logLines) log(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.WriteString(s + "\n")
}

func (l *logLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// openWriter opens dir as the device of state, writing (a mount).
func openWriter(t *testing.T, dir, state string, log *logLines) (*session.Session, *vault.Vault) {
	t.Helper()
	s, err := session.Open(dir, password, session.Options{BoundVaultID: vaultID,
		Freshness: &fresh.Options{StateDir: state, Interval: -1, Log: log.log, Buckets: testBuckets()}})
	if err != nil {
		t.Fatal(err)
	}
	v, err := vault.FromSession(s)
	if err != nil {
		t.Fatal(err)
	}
	return s, v
}

// TestCrashRecovery: a writer that ends without its last batch (a crash)
// leaves changes no manifest records; the next writer finds the state
// dirty, logs what differs and records the vault as it is, so status is
// clean after it.
func TestCrashRecovery(t *testing.T) {
	dir, state := newVault(t)
	var log logLines
	s, v := openWriter(t, dir, state, &log)
	t.Cleanup(func() { v.Close() })
	if err := v.WriteFile("a", []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.Freshness().Flush(); err != nil {
		t.Fatal(err)
	}
	if err := v.WriteFile("b", []byte("b"), 0o644); err != nil {
		t.Fatal(err)
	}
	fresh.Crash(s.Freshness())

	rep := status(t, dir, state)
	if rep.Status != fresh.Behind || !strings.Contains(rep.String(), "/b: not in any manifest") {
		t.Fatalf("after the crash: %s", rep)
	}
	s2, v2 := openWriter(t, dir, state, &log)
	_ = s2
	if err := v2.Close(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "did not end cleanly") || !strings.Contains(log.String(), "/b: not in any manifest") {
		t.Fatalf("the mount after the crash logged:\n%s", log.String())
	}
	if rep := status(t, dir, state); rep.Status != fresh.OK {
		t.Fatalf("after recovery: %s", rep)
	}
}

// TestMountLogsRollback: a mount starting on a rolled-back vault says so
// in its log (report mode), naming the path.
func TestMountLogsRollback(t *testing.T) {
	dir, state := newVault(t)
	var log logLines
	_, v := openWriter(t, dir, state, &log)
	if err := v.WriteFile("a", []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := v.EncryptPath("a")
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, p)); err != nil {
		t.Fatal(err)
	}
	_, v = openWriter(t, dir, state, &log)
	v.Close()
	if !strings.Contains(log.String(), "behind: /a: deleted") {
		t.Fatalf("the mount logged:\n%s", log.String())
	}
}

// TestSecondWriter: a second writer of one state directory is refused
// (two mounts of one vault on one machine), while an offline check of it
// only reads; with a state directory of its own it is another device.
func TestSecondWriter(t *testing.T) {
	dir, state := newVault(t)
	var log logLines
	_, v := openWriter(t, dir, state, &log)
	defer v.Close()
	_, err := session.Open(dir, password, session.Options{BoundVaultID: vaultID, Freshness: &fresh.Options{StateDir: state, Interval: -1, Buckets: testBuckets()}})
	if !errors.Is(err, fresh.ErrLocked) {
		t.Fatalf("second writer: %v, want ErrLocked", err)
	}
	if rep := status(t, dir, state); rep.Status == fresh.RolledBack {
		t.Fatalf("check beside a writer: %s", rep)
	}
	_, v2 := openWriter(t, dir, filepath.Join(t.TempDir(), "other"), &log)
	if err := v2.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestStrictRefusesRollback: a strict writer (mount --freshness strict)
// refuses a vault put back to an older copy, and opens it once the state
// is accepted; after an unclean end of the last writer it opens and logs
// instead (its own unrecorded changes would look the same).
func TestStrictRefusesRollback(t *testing.T) {
	dir, state := newVault(t)
	var log logLines
	strict := func() (*session.Session, error) {
		return session.Open(dir, password, session.Options{BoundVaultID: vaultID,
			Freshness: &fresh.Options{StateDir: state, Interval: -1, Log: log.log, Strict: true, Buckets: testBuckets()}})
	}
	write := func(name string, crash bool) {
		t.Helper()
		s, v := openWriter(t, dir, state, &log)
		if err := v.WriteFile(name, []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
		if crash {
			if err := s.Freshness().Flush(); err != nil {
				t.Fatal(err)
			}
			fresh.Crash(s.Freshness())
			return
		}
		if err := v.Close(); err != nil {
			t.Fatal(err)
		}
	}
	snapshot := func() string {
		t.Helper()
		snap := filepath.Join(t.TempDir(), "snap")
		if out, err := exec.Command("cp", "-a", dir, snap).CombinedOutput(); err != nil {
			t.Fatalf("cp: %v: %s", err, out)
		}
		return snap
	}
	restore := func(snap string) {
		t.Helper()
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("cp", "-a", snap, dir).CombinedOutput(); err != nil {
			t.Fatalf("cp: %v: %s", err, out)
		}
	}

	write("a", false)
	old := snapshot()
	write("b", false)
	restore(old)
	if s, err := strict(); !errors.Is(err, fresh.ErrRolledBack) {
		if err == nil {
			s.Close()
		}
		t.Fatalf("strict open of a rolled-back vault: %v, want ErrRolledBack", err)
	}
	if rep := status(t, dir, state); rep.Status != fresh.RolledBack {
		t.Fatalf("the refused open changed the state: %s", rep)
	}
	s, err := session.Open(dir, password, options(state, true))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Freshness().Accept(); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = strict()
	if err != nil {
		t.Fatalf("strict open after accept: %v", err)
	}
	s.Close()

	// After a crash: the vault as it is is recorded, with a log line.
	old = snapshot()
	write("c", true)
	write("d", true)
	restore(old)
	log = logLines{}
	s, err = strict()
	if err != nil {
		t.Fatalf("strict open after an unclean end: %v", err)
	}
	s.Close()
	if !strings.Contains(log.String(), "did not end cleanly") {
		t.Fatalf("the open after the crash logged:\n%s", log.String())
	}
}
