package fsck

import (
	"os"
	"path/filepath"
	"testing"

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
