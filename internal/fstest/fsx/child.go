package fsx

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
)

// childEnv marks a re-executed test binary as a RunMultiProcess worker.
const childEnv = "ENCRYPTFS_FSTEST_FSX_CHILD"

// childSpec is what one worker process does.
type childSpec struct {
	ID              int
	TestDir, RefDir string
	Shared          string // name of the shared file in both dirs
	Lo, Hi          int64  // this worker's region of the shared file
	Seed            int64
	Ops             int
	Opts            Options
}

// childResult is what a worker process reports on stdout.
type childResult struct {
	OwnName string // final name of its own file (renames move it)
	Err     string // empty on success
	Log     string // the operation log tails, on failure
	Summary string
}

// The worker runs before the test binary's own main, so RunMultiProcess
// works from any package's tests without a TestMain.
func init() {
	if os.Getenv(childEnv) != "1" {
		return
	}
	os.Exit(childMain())
}

// childMain reads a childSpec from stdin, runs it, prints a childResult.
func childMain() int {
	var spec childSpec
	if err := json.NewDecoder(os.Stdin).Decode(&spec); err != nil {
		fmt.Fprintln(os.Stderr, "fsx child: decode spec:", err)
		return 2
	}
	res := runChild(spec)
	if err := json.NewEncoder(os.Stdout).Encode(res); err != nil {
		fmt.Fprintln(os.Stderr, "fsx child: encode result:", err)
		return 2
	}
	if res.Err != "" {
		return 1
	}
	return 0
}

// runChild interleaves operations on the worker's own file (any size
// change allowed) and on its region of the shared file (size fixed).
func runChild(spec childSpec) childResult {
	opts := spec.Opts.withDefaults()
	res := childResult{OwnName: fmt.Sprintf("fsx-mp-%d-own-%d", spec.Seed, spec.ID)}
	own, err := createPair(spec.TestDir, spec.RefDir, res.OwnName, 0)
	if err != nil {
		res.Err = err.Error()
		return res
	}
	defer own.close()
	shared, err := openPair(spec.TestDir, spec.RefDir, spec.Shared)
	if err != nil {
		res.Err = err.Error()
		return res
	}
	defer shared.close()

	seed := spec.Seed*1000 + int64(spec.ID)
	ws := [2]*worker{
		newWorker(own, seed, opts, region{lo: 0, hi: opts.MaxSize, resize: true}),
		newWorker(shared, seed+500, opts, region{lo: spec.Lo, hi: spec.Hi}),
	}
	names := [2]string{"own file", "shared file region"}
	pick := rand.New(rand.NewPCG(uint64(seed), 0x51ed))
	var steps [2]int
	for range spec.Ops {
		k := pick.IntN(2)
		steps[k]++
		if err := ws[k].step(steps[k]); err != nil {
			res.Err = fmt.Sprintf("worker %d (seed %d), %s: %v", spec.ID, seed, names[k], err)
			res.Log = ws[k].log.tail(40)
			res.OwnName = own.name
			return res
		}
	}
	for k, w := range ws {
		w.lastSize, _ = w.p.size()
		if err := w.checkRegion(); err != nil {
			res.Err = fmt.Sprintf("worker %d (seed %d), %s, final check: %v", spec.ID, seed, names[k], err)
			res.Log = w.log.tail(40)
		}
	}
	res.OwnName = own.name
	res.Summary = fmt.Sprintf("worker %d: own file %d ops (%s); shared region [%d, %d) %d ops (%s)",
		spec.ID, steps[0], ws[0].counts(), spec.Lo, spec.Hi, steps[1], ws[1].counts())
	return res
}
