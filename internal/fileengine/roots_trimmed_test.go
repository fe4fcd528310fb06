package fileengine

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/encryptfs/encryptfs/internal/crypto/content"
)

// TestTrimmedLeavesSuite runs the roots tests again with trimmed leaves,
// in the compact layout (every vault of encryptfs init) and in the
// FileRoots one: the same guarantees under the other rule.
func TestTrimmedLeavesSuite(t *testing.T) {
	trimmedLeaves = true
	defer func() { trimmedLeaves = false }()
	for _, compact := range []bool{true, false} {
		compactRoots = compact
		for name, test := range map[string]func(*testing.T){
			"Model": TestRootsModel, "Tamper": TestRootsTamper, "DirtyReplay": TestRootsDirtyReplay,
			"CrashStates": TestRootsCrashStates, "HeaderFields": TestRootsHeaderFields,
			"LargeRequests": TestRootsLargeRequests, "ImplicitPathNoSync": TestRootsImplicitPathNoSync,
			"HugeRepairAndPunch": TestRootsHugeRepairAndPunch,
		} {
			t.Run(map[bool]string{true: "compact/", false: "fileroots/"}[compact]+name, test)
		}
	}
	compactRoots = false
}

// newLeavesEngine is a compact roots engine with 4 KiB chunks and the
// given rule for the roots it writes; engines made by it share the keys.
func newLeavesEngine(t *testing.T, trimmed bool) *Engine {
	t.Helper()
	compactRoots, trimmedLeaves = true, trimmed
	defer func() { compactRoots, trimmedLeaves = false, false }()
	return newRootsEngine(t, content.AES256GCM, 4<<10, sequential(5))
}

// TestTrimmedLeavesMixed: a vault that gains trimmed leaves (encryptfs
// upgrade: the config only) holds files of both rules. A file whose root
// hashes whole blocks reads in the trimmed engine, verified, and moves to
// trimmed leaves at its next clean header; a build without the feature
// refuses that header. What the header says is the rule: a trimmed root
// under a header without the flag (or the reverse) fails as tampering.
func TestTrimmedLeavesMixed(t *testing.T) {
	whole, trimmed := newLeavesEngine(t, false), newLeavesEngine(t, true)
	r := rand.New(rand.NewPCG(3, 4))
	for _, size := range []int{1, 4 << 10, 3*(4<<10) + 5, 20*(4<<10) + 1, 300 * (4 << 10)} {
		data := randomBytes(r, size)
		m := rootsFile(t, whole, data)
		if h := headerOf(t, whole, m); h.Flags&content.FlagTrimmed != 0 {
			t.Fatalf("%d bytes: the whole-leaves engine wrote TRIMMED", size)
		}
		readBack(t, trimmed, m, data) // a file of before the upgrade reads

		f := openRoots(t, trimmed, m)
		mustWrite(t, f, []byte("new"), 1)
		mustClose(t, f)
		copy(data[1:], "new")
		if len(data) < 4 {
			data = append(data[:1], "new"...)
		}
		if h := headerOf(t, trimmed, m); h.Flags&content.FlagTrimmed == 0 {
			t.Fatalf("%d bytes: no TRIMMED after a write in the trimmed engine", size)
		}
		readBack(t, trimmed, m, data)
		if _, err := whole.OpenAt(m, testPlace); !errors.Is(err, content.ErrBadHeader) {
			t.Fatalf("%d bytes: a build without trimmed leaves opened a TRIMMED header: %v", size, err)
		}
	}
}

// TestTrimmedLeavesRuleIsTheHeaders: the root is checked under the rule
// its header names. A header made by the engine's key with the flag
// cleared (what a bug, not the storage, could do: the flag is under the
// MAC) does not verify, so neither rule can stand in for the other, and
// the engine's memo of the file does not either.
func TestTrimmedLeavesRuleIsTheHeaders(t *testing.T) {
	e := newLeavesEngine(t, true)
	for _, size := range []int{1, 3*(4<<10) + 5} {
		m := rootsFile(t, e, bytes.Repeat([]byte{7}, size))
		h := headerOf(t, e, m)
		h.Flags &^= content.FlagTrimmed
		if _, err := m.WriteAt(e.suite.MarshalHeader(h), 0); err != nil {
			t.Fatal(err)
		}
		// The same engine: its memo remembers the file under the trimmed
		// rule, so it must not vouch for the header without the flag.
		if err := readErr(t, e, m); !errors.Is(err, content.ErrBadRoot) {
			t.Fatalf("%d bytes: whole-leaves check of a trimmed root: %v, want ErrBadRoot", size, err)
		}
	}
}

// headerOf parses the header of the file in m.
func headerOf(t *testing.T, e *Engine, m *MemBacking) content.Header {
	t.Helper()
	h, err := e.suite.ParseHeader(m.Bytes()[:e.lay.header])
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// readErr opens the file in m and reads it whole: the first error.
func readErr(t *testing.T, e *Engine, m *MemBacking) error {
	t.Helper()
	f, err := e.OpenAt(m, testPlace)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = readAll(f)
	return err
}
