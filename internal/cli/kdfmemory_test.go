package cli

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/encryptfs/encryptfs/internal/fstest"
)

// procKiB returns field (VmRSS, VmHWM) of process pid's status, in KiB.
func procKiB(t *testing.T, pid int, field string) int {
	t.Helper()
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// TestForegroundMountReturnsKDFMemory (issue 22, memory): a foreground
// mount (`mount -f`, the way systemd runs it) unlocks with Argon2id,
// whose buffer is the size of the memory cost, and then serves for as
// long as it is mounted. The buffer must go back to the OS after the
// unlock: idle RSS within 64 MiB, where it used to stay at the cost.
func TestForegroundMountReturnsKDFMemory(t *testing.T) {
	fstest.RequireFUSE(t)
	const costMiB = 256
	dir := filepath.Join(t.TempDir(), "cipher")
	pf := writePassfile(t, "pw")
	run(t, "", "init", "--passfile", pf, "--kdf-time", "1", "--kdf-memory", strconv.Itoa(costMiB), "--kdf-threads", "1", dir).want(t, 0)
	mnt := t.TempDir()
	cleanupMount(t, mnt)
	cmd := exec.Command(binary, "mount", "-f", "--passfile", pf, dir, mnt)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		run(t, "", "unmount", mnt)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	}()
	deadline := time.Now().Add(30 * time.Second)
	for mountSource(mnt) == "" {
		if time.Now().After(deadline) {
			t.Fatal("the foreground mount did not mount")
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	hwm, rss := procKiB(t, cmd.Process.Pid, "VmHWM"), procKiB(t, cmd.Process.Pid, "VmRSS")
	t.Logf("peak %d MiB, idle %d MiB", hwm>>10, rss>>10)
	if hwm < costMiB<<10 {
		t.Fatalf("peak RSS %d KiB: the unlock did not use its %d MiB cost, the test proves nothing", hwm, costMiB)
	}
	if rss > 64<<10 {
		t.Fatalf("idle RSS after the unlock: %d MiB, want at most 64", rss>>10)
	}
}
