package fsx

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// sharedRegion is the size of each process's region of the shared file. It
// is deliberately not a multiple of any chunk-like boundary, so neighbouring
// regions share 4 KiB, 64 KiB and 1 MiB chunks: concurrent writers then
// exercise the filesystem's read-modify-write locking.
const sharedRegion = 777_777

// RunMultiProcess starts procs processes (this test binary re-executed as
// a worker). Each applies ops operations, interleaving its own file pair
// (any operation) with its own disjoint region of one shared file pair
// (writes, reads, fallocate and hole punches that keep the size), checking
// as it goes. At the end the parent compares every file afresh.
func RunMultiProcess(t *testing.T, testDir, refDir string, seed int64, procs, ops int) {
	t.Helper()
	RunMultiProcessWithOptions(t, testDir, refDir, seed, procs, ops, Options{})
}

// RunMultiProcessWithOptions is RunMultiProcess with exemptions.
func RunMultiProcessWithOptions(t *testing.T, testDir, refDir string, seed int64, procs, ops int, opts Options) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatalf("find test binary: %v", err)
	}
	shared := fmt.Sprintf("fsx-mp-%d-shared", seed)
	sp, err := createPair(testDir, refDir, shared, int64(procs)*sharedRegion)
	if err != nil {
		t.Fatalf("fsx multi-process seed %d: %v", seed, err)
	}
	if err := sp.close(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sp.remove(t) })

	type running struct {
		cmd            *exec.Cmd
		stdout, stderr bytes.Buffer
	}
	runs := make([]*running, procs)
	for i := range procs {
		spec := childSpec{ID: i, TestDir: testDir, RefDir: refDir, Shared: shared,
			Lo: int64(i) * sharedRegion, Hi: int64(i+1) * sharedRegion, Seed: seed, Ops: ops, Opts: opts}
		in, err := json.Marshal(spec)
		if err != nil {
			t.Fatal(err)
		}
		r := &running{cmd: exec.Command(exe)}
		r.cmd.Env = append(os.Environ(), childEnv+"=1")
		r.cmd.Stdin = bytes.NewReader(in)
		r.cmd.Stdout, r.cmd.Stderr = &r.stdout, &r.stderr
		if err := r.cmd.Start(); err != nil {
			t.Fatalf("start worker %d: %v", i, err)
		}
		runs[i] = r
	}

	var own []string
	for i, r := range runs {
		waitErr := r.cmd.Wait()
		var res childResult
		if err := json.Unmarshal(r.stdout.Bytes(), &res); err != nil {
			t.Errorf("worker %d: %v, no result (%v)\nstderr: %s", i, waitErr, err, r.stderr.Bytes())
			continue
		}
		if res.Err != "" || waitErr != nil {
			t.Errorf("fsx multi-process seed %d, %d procs, %d ops: %s (exit: %v)\n%s%s", seed, procs, ops, res.Err, waitErr, res.Log, r.stderr.Bytes())
			continue
		}
		t.Log(res.Summary)
		own = append(own, res.OwnName)
		ownPair := &pair{dirs: sp.dirs, name: res.OwnName}
		t.Cleanup(func() { ownPair.remove(t) })
	}
	if t.Failed() {
		return
	}
	for _, name := range append(own, shared) {
		if err := compareFiles(filepath.Join(testDir, name), filepath.Join(refDir, name)); err != nil {
			t.Errorf("fsx multi-process seed %d, file %s: %v", seed, name, err)
		}
	}
}
