package cli

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/encryptfs/encryptfs/internal/fstest"
	"github.com/encryptfs/encryptfs/internal/fstest/mounttest"
)

func TestDaemonProcs(t *testing.T) {
	noEnv := func(string) string { return "" }
	set := func(k string) string {
		if k == "GOMAXPROCS" {
			return "3"
		}
		return ""
	}
	for _, c := range []struct {
		cur, cpus, waiters int
		getenv             func(string) string
		want               int
	}{
		{2, 2, 2, noEnv, 4},   // classic on 2 CPUs
		{2, 2, 3, noEnv, 5},   // three waiters (giveWaitersProcs asks only for classic ones)
		{4, 2, 2, noEnv, 4},   // called again: the same answer
		{1, 8, 8, noEnv, 9},   // a cgroup limit of 1 CPU: its own P, then the waiters'
		{3, 2, 2, set, 3},     // GOMAXPROCS in the environment stays
		{2, 2, 0, noEnv, 2},   // no waiters (go-fuse's loop)
		{16, 2, 2, noEnv, 16}, // never lowered
	} {
		if got := daemonProcs(c.cur, c.cpus, c.waiters, c.getenv); got != c.want {
			t.Errorf("daemonProcs(%d, %d, %d) = %d, want %d", c.cur, c.cpus, c.waiters, got, c.want)
		}
	}
}

// TestDaemonGOMAXPROCS: a daemon mounted on the classic transport
// (forward or reverse) runs with a P per waiting worker thread on top of
// one per CPU, unless GOMAXPROCS is set in its environment; on io_uring
// it keeps the runtime's default. Read from the runtime's own
// scheduler trace (GODEBUG=schedtrace), which prints gomaxprocs.
func TestDaemonGOMAXPROCS(t *testing.T) {
	fstest.RequireFUSE(t)
	dir, _ := newVault(t, "pw")
	pf := writePassfile(t, "pw")
	plain := t.TempDir()
	run(t, "", append(append([]string{"init", "--reverse", "--passfile", pf}, cheapKDF...), plain)...).want(t, 0)
	cpus := runtime.NumCPU() // what the daemon's runtime starts with here
	for _, c := range []struct {
		transport string // "reverse": a reverse mount (classic)
		env       string
		exactly   int
	}{
		{transport: "classic", exactly: 2 * cpus},
		{transport: "uring", exactly: cpus}, // io_uring keeps the default (giveWaitersProcs)
		{transport: "reverse", exactly: 2 * cpus},
		{transport: "classic", env: "GOMAXPROCS=3", exactly: 3},
	} {
		t.Run(fmt.Sprintf("%s%s", c.transport, strings.TrimPrefix(c.env, "GOMAXPROCS=")), func(t *testing.T) {
			if c.transport == "uring" {
				mounttest.RequireURing(t)
			}
			mnt := t.TempDir()
			cleanupMount(t, mnt)
			args := []string{"mount", "-f", "--transport", c.transport, "--passfile", pf, dir, mnt}
			if c.transport == "reverse" {
				args = []string{"mount", "-f", "--reverse", "--passfile", pf, plain, mnt}
			}
			cmd := exec.Command(binary, args...)
			cmd.Env = append(os.Environ(), "GODEBUG=schedtrace=50")
			if c.env != "" {
				cmd.Env = append(cmd.Env, c.env)
			}
			var stderr syncBuffer
			cmd.Stderr = &stderr
			exited := startCmd(t, cmd)
			// The last trace line after the mounted line: taken once the
			// mount is up (the trace runs from the start of the process).
			procs := regexp.MustCompile(`SCHED \d+ms: gomaxprocs=(\d+)`)
			var got int
			waitFor(t, "a trace line after the mount", func() bool {
				s := stderr.String()
				i := strings.Index(s, "mounted ")
				if i < 0 {
					return false
				}
				m := procs.FindAllStringSubmatch(s[i:], -1)
				if len(m) == 0 {
					return false
				}
				got, _ = strconv.Atoi(m[len(m)-1][1])
				return true
			})
			cmd.Process.Signal(syscall.SIGTERM)
			if err := waitExit(exited); err != nil {
				t.Fatalf("after SIGTERM: %v", err)
			}
			if got != c.exactly {
				t.Errorf("gomaxprocs %d, want %d, %d CPUs", got, c.exactly, cpus)
			}
		})
	}
}
