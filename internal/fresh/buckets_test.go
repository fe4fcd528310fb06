package fresh_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	fc "github.com/encryptfs/encryptfs/internal/crypto/fresh"
	"github.com/encryptfs/encryptfs/internal/fresh"
	"github.com/encryptfs/encryptfs/internal/session"
)

// optionsLayout is options with the manifest layout chosen.
func optionsLayout(state string, offline, buckets bool) session.Options {
	o := options(state, offline)
	o.Freshness.Buckets = buckets
	return o
}

// writeDirs mounts dir with o and writes file name in each of n
// directories.
func writeDirs(t *testing.T, dir string, o session.Options, n int, name string) {
	t.Helper()
	mnt, _, unmount := mountWith(t, dir, o)
	for i := range n {
		d := filepath.Join(mnt, fmt.Sprintf("d%02d", i))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, name), []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := unmount(); err != nil {
		t.Fatal(err)
	}
}

// manifestNames lists the manifests directory of the only device.
func manifestNames(t *testing.T, dir string) (buckets, files []string) {
	t.Helper()
	ents, err := os.ReadDir(ownManifests(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if _, ok := fc.ParseBucketName(e.Name()); ok {
			buckets = append(buckets, e.Name())
		} else if _, ok := fc.DecodeID(e.Name()); ok {
			files = append(files, e.Name())
		} else {
			t.Errorf("unexpected %q in the manifests directory", e.Name())
		}
	}
	return buckets, files
}

// TestBucketsThroughTheMount: a mount of a vault with buckets writes no
// manifest file of its own per directory, only buckets; status is clean;
// and a bucket entry edited, dropped or put back from before is found
// as a manifest that went back.
func TestBucketsThroughTheMount(t *testing.T) {
	dir, state := newVault(t)
	// 300 directories in at most 256 buckets: many share one.
	writeDirs(t, dir, optionsLayout(state, false, true), 300, "one")
	buckets, files := manifestNames(t, dir)
	if len(files) != 0 || len(buckets) < 100 || len(buckets) > 256 {
		t.Fatalf("301 directories: %d buckets, %d manifest files", len(buckets), len(files))
	}
	bucketStatus := func() *fresh.Report { return statusWith(t, dir, optionsLayout(state, true, true)) }
	if rep := bucketStatus(); rep.Status != fresh.OK {
		t.Fatalf("after the mount: %s", rep)
	}
	man := ownManifests(t, dir)
	old := map[string][]byte{}
	for _, b := range buckets {
		old[b] = mustRead(t, filepath.Join(man, b))
	}
	// A new file in 20 of them: their buckets are rewritten with the
	// other directories' entries kept.
	writeDirs(t, dir, optionsLayout(state, false, true), 20, "two")
	if rep := bucketStatus(); rep.Status != fresh.OK {
		t.Fatalf("after the second mount: %s", rep)
	}
	pick := ""
	for _, b := range buckets {
		if !bytes.Equal(old[b], mustRead(t, filepath.Join(man, b))) {
			pick = b
			break
		}
	}
	if pick == "" {
		t.Fatal("no bucket changed with its directories' files")
	}
	cur := mustRead(t, filepath.Join(man, pick))
	num, _ := fc.ParseBucketName(pick)
	entries, err := fc.ParseBucket(num, cur)
	if err != nil {
		t.Fatal(err)
	}
	for name, file := range map[string][]byte{
		"the bucket put back":   old[pick],
		"an entry dropped":      mustMarshal(t, num, entries[1:]),
		"a byte of an entry":    flipLast(cur),
		"the table cut":         cur[:fc.BucketHeadSize+3],
		"the entries swapped":   swapFirstTwo(t, num, entries),
		"the bucket as it was2": cur,
	} {
		if err := os.WriteFile(filepath.Join(man, pick), file, 0o600); err != nil {
			t.Fatal(err)
		}
		rep := bucketStatus()
		if name == "the bucket as it was2" {
			if rep.Status != fresh.OK {
				t.Fatalf("bucket restored: %s", rep)
			}
			continue
		}
		if rep.Status != fresh.RolledBack {
			t.Errorf("%s: %s", name, rep)
		}
	}
}

func mustMarshal(t *testing.T, b byte, es []fc.BucketEntry) []byte {
	t.Helper()
	file, err := fc.MarshalBucket(b, append([]fc.BucketEntry(nil), es...))
	if err != nil {
		t.Fatal(err)
	}
	return file
}

func flipLast(b []byte) []byte {
	out := bytes.Clone(b)
	out[len(out)-1] ^= 1
	return out
}

// swapFirstTwo gives the first two directories each other's manifest (or,
// with one entry, the entry under another ID of the bucket).
func swapFirstTwo(t *testing.T, b byte, es []fc.BucketEntry) []byte {
	t.Helper()
	sw := append([]fc.BucketEntry(nil), es...)
	if len(sw) < 2 {
		id := sw[0].DirID
		id[15] ^= 1
		return mustMarshal(t, b, []fc.BucketEntry{{DirID: id, File: sw[0].File}})
	}
	sw[0].File, sw[1].File = sw[1].File, sw[0].File
	return mustMarshal(t, b, sw)
}

// TestPackManifests: the upgrade's packing of a vault written with one
// manifest file per directory gives a vault whose check, with buckets,
// is clean, with every file removed after; a mount of the old layout
// between an interrupted packing and its rerun is not lost (its newer
// files win); and a rollback from before the packing is still found.
func TestPackManifests(t *testing.T) {
	dir, state := newVault(t)
	writeDirs(t, dir, optionsLayout(state, false, false), 12, "one")
	_, files := manifestNames(t, dir)
	if len(files) != 13 {
		t.Fatalf("13 directories: %d manifest files", len(files))
	}
	man := ownManifests(t, dir)
	before := map[string][]byte{}
	for _, f := range files {
		before[f] = mustRead(t, filepath.Join(man, f))
	}
	// An interrupted run: packed, not removed, no flag; then a mount of
	// the old layout writes again.
	if n, err := fresh.PackManifests(dir); err != nil || n != 13 {
		t.Fatalf("pack: %d, %v", n, err)
	}
	writeDirs(t, dir, optionsLayout(state, false, false), 12, "two")
	if n, err := fresh.PackManifests(dir); err != nil || n != 13 {
		t.Fatalf("pack again: %d, %v", n, err)
	}
	if n, err := fresh.RemovePacked(dir); err != nil || n != 13 {
		t.Fatalf("remove: %d, %v", n, err)
	}
	if buckets, files := manifestNames(t, dir); len(files) != 0 || len(buckets) == 0 {
		t.Fatalf("after packing: %d buckets, %d files", len(buckets), len(files))
	}
	if rep := statusWith(t, dir, optionsLayout(state, true, true)); rep.Status != fresh.OK {
		t.Fatalf("packed: %s", rep)
	}
	// A manifest file from before the second mount, planted back: not a
	// bucket's, so not read, and not removed by a rerun.
	f := ""
	for _, name := range files {
		id, _ := fc.DecodeID(name)
		b := fc.BucketOf([fc.IDSize]byte(id))
		es, err := fc.ParseBucket(b, mustRead(t, filepath.Join(man, fc.BucketName(b))))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			if e.DirID == [fc.IDSize]byte(id) && !bytes.Equal(e.File, before[name]) {
				f = name
			}
		}
	}
	if f == "" {
		t.Fatal("no directory's manifest changed in the second mount")
	}
	if err := os.WriteFile(filepath.Join(man, f), before[f], 0o600); err != nil {
		t.Fatal(err)
	}
	if n, err := fresh.RemovePacked(dir); err != nil || n != 0 {
		t.Fatalf("remove of a file no bucket holds: %d, %v", n, err)
	}
	if rep := statusWith(t, dir, optionsLayout(state, true, true)); rep.Status != fresh.OK {
		t.Fatalf("a stray manifest file beside the buckets: %s", rep)
	}
	// Packed again over the buckets, the old file wins (as a mount's
	// newer file would) and is found to have gone back.
	if _, err := fresh.PackManifests(dir); err != nil {
		t.Fatal(err)
	}
	rep := statusWith(t, dir, optionsLayout(state, true, true))
	if rep.Status != fresh.RolledBack || !strings.Contains(rep.String(), "went back") {
		t.Fatalf("an old manifest packed: %s", rep)
	}
}
