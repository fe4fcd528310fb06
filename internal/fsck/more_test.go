package fsck

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/crypto/names"
	"github.com/encryptfs/encryptfs/internal/session"
	"github.com/encryptfs/encryptfs/vault"
)

func TestXChaChaChunkRanges(t *testing.T) {
	fx := newFixtureCipher(t, "xchacha20-poly1305")
	const overhead = 24 + 16
	flipByte(t, fx.abs(t, pBig), 36+3*(chunk+overhead)+60)
	rep := fx.check(t, Options{})
	if len(rep.Problems) != 1 || rep.Problems[0].Kind != KindChunk ||
		!equalRanges(rep.Problems[0].Ranges, []Range{{3 * chunk, 4 * chunk}}) {
		t.Fatalf("%s", dump(rep))
	}
}

// TestManyChunks puts bad chunks on both sides of a read batch boundary,
// first and last, in a file of more than one batch.
func TestManyChunks(t *testing.T) {
	fx := newFixture(t)
	perBatch := int64(readBatch / chunk)
	nChunks := perBatch + 80
	data := testData(9, int(nChunks*chunk-5))
	v, err := vault.Open(fx.dir, []byte("pw"))
	if err != nil {
		t.Fatal(err)
	}
	if err := v.WriteFile("/many", data, 0o600); err != nil {
		t.Fatal(err)
	}
	v.Close()
	bad := []int64{0, 7, 8, perBatch - 1, perBatch, nChunks - 1}
	var want []Range
	p := fx.abs(t, "/many")
	for _, i := range bad {
		flipByte(t, p, cipherChunkOff(i)+40)
		want = append(want, Range{i * chunk, min((i+1)*chunk, int64(len(data)))})
	}
	dest := filepath.Join(t.TempDir(), "out")
	var last Progress
	rep := fx.check(t, Options{Salvage: dest, Progress: func(p Progress) { last = p }})
	if len(rep.Problems) != 1 || !equalRanges(rep.Problems[0].Ranges, want) {
		t.Fatalf("ranges %v\nwant %v", rep.Problems, want)
	}
	if rep.Summary.BadChunks != int64(len(bad)) || rep.Summary.SalvageZeroBytes != rep.Summary.BadBytes {
		t.Errorf("summary %+v", rep.Summary)
	}
	got, err := os.ReadFile(filepath.Join(dest, "many"))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range want {
		clear(data[r.Start:r.End])
	}
	if string(got) != string(data) {
		t.Error("salvaged content differs")
	}
	if last.Files != last.TotalFiles || last.Bytes != last.TotalBytes || last.Files != rep.Summary.Files {
		t.Errorf("final progress %+v, summary %+v", last, rep.Summary)
	}
}

func TestLongNameConflictCopy(t *testing.T) {
	fx := newFixture(t)
	p := fx.abs(t, "/"+longName)
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	side, err := os.ReadFile(p + names.LongNameSuffix)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, p+" (1)", data)
	writeFile(t, p+".sync-conflict-20261122-101010-XXXXXXX"+names.LongNameSuffix, side)
	// Syncthing puts its suffix before what looks like an extension.
	bn := filepath.Base(p)
	h := strings.TrimPrefix(bn, names.LongNamePrefix)
	before := "encryptfs.long.sync-conflict-20261122-101010-YYYYYYY." + h
	writeFile(t, filepath.Join(filepath.Dir(p), before), data)
	dest := filepath.Join(t.TempDir(), "out")
	rep := fx.check(t, Options{Salvage: dest})
	want := []problemKey{
		{KindConflict, bn + " (1)", "/" + longName + " (1)"},
		{KindConflict, before, "/" + longName + ".sync-conflict-20261122-101010-YYYYYYY"},
		{KindOrphanSidecar, bn + ".sync-conflict-20261122-101010-XXXXXXX" + names.LongNameSuffix, ""},
	}
	if got := keysOf(rep); !sameKeys(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	for _, name := range []string{longName + " (1)", longName + ".sync-conflict-20261122-101010-YYYYYYY"} {
		if got, err := os.ReadFile(filepath.Join(dest, name)); err != nil || string(got) != string(fx.files["/"+longName]) {
			t.Errorf("conflict copy salvage %q: %v", name, err)
		}
	}
}

func TestProblemLine(t *testing.T) {
	tests := []struct {
		p    Problem
		want string
	}{
		{Problem{Kind: KindChunk, CipherPath: "a/b", PlainPath: "/x y", Ranges: []Range{{0, 10}, {10, 20}, {40, 50}}, Detail: "d", SalvagedAs: "x y"},
			`bad-chunk a/b (plain "/x y"): bytes 0-19, 40-49: d [salvaged as "x y"]`},
		{Problem{Kind: KindForeign, CipherPath: "f.txt", Detail: "not ours"},
			`foreign-name f.txt (plain name unknown): not ours`},
		{Problem{Kind: KindBadName, CipherPath: "a\nb", Detail: "x"},
			`bad-name "a\nb" (plain name unknown): x`},
	}
	for _, tt := range tests {
		if got := ProblemLine(tt.p); got != tt.want {
			t.Errorf("got  %s\nwant %s", got, tt.want)
		}
	}
}

// TestJSONShape pins the field names of the --json output.
func TestJSONShape(t *testing.T) {
	rep := &Report{CipherDir: "/c", Problems: []Problem{{Kind: KindChunk, CipherPath: "a", PlainPath: "/p", Ranges: []Range{{1, 2}}, Detail: "d"}}}
	(&walker{rep: rep}).finish()
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	keys := func(m map[string]any) []string {
		var out []string
		for k := range m {
			out = append(out, k)
		}
		slices.Sort(out)
		return out
	}
	if got := keys(m); !reflect.DeepEqual(got, []string{"CipherDir", "Clean", "Problems", "Summary"}) {
		t.Errorf("report keys %v", got)
	}
	p := m["Problems"].([]any)[0].(map[string]any)
	if got := keys(p); !reflect.DeepEqual(got, []string{"CipherPath", "Detail", "Kind", "PlainPath", "Ranges"}) {
		t.Errorf("problem keys %v", got)
	}
	if got := keys(p["Ranges"].([]any)[0].(map[string]any)); !reflect.DeepEqual(got, []string{"End", "Start"}) {
		t.Errorf("range keys %v", got)
	}
	s := m["Summary"].(map[string]any)
	if s["Problems"].(float64) != 1 || s["ByKind"].(map[string]any)["bad-chunk"].(float64) != 1 {
		t.Errorf("summary %v", s)
	}
	if !strings.Contains(SummaryLine(rep), "1 problem(s) (1 bad-chunk)") {
		t.Errorf("summary line %q", SummaryLine(rep))
	}
}

// TestHintEditedParams: with another chunk size (as if encryptfs.conf had
// been edited) every file fails and the report says why that may be.
func TestHintEditedParams(t *testing.T) {
	fx := newFixture(t)
	c, err := config.Load(fx.dir)
	if err != nil {
		t.Fatal(err)
	}
	c.Params.ChunkSize = 2 * chunk
	if fx.sess, err = session.New(fx.dir, c.Params, fx.master, session.Options{}); err != nil {
		t.Fatal(err)
	}
	fx.tree = fx.sess.Tree()
	rep := fx.check(t, Options{})
	if len(rep.Hints) != 1 || !strings.Contains(rep.Hints[0], "ChunkSize") {
		t.Fatalf("hints %q\n%s", rep.Hints, dump(rep))
	}
	if clean := newFixture(t).check(t, Options{}); len(clean.Hints) != 0 {
		t.Errorf("hints on a clean vault: %q", clean.Hints)
	}
}
