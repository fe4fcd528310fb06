package mounttest_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/encryptfs/encryptfs/internal/fstest/mounttest"
)

// BenchmarkRootsStream is the A/B of file roots through a real mount: a
// v1 vault, a bound vault and a bound vault with file roots, in
// interleaved rounds (the order rotated every round, as bench/stream.sh),
// on CIPHERDIRs in TMPDIR. Rows, per round and side:
//
//	write-fsync  MiB/s: ENCRYPTFS_BENCH_MIB (default 256) MiB in 128 KiB
//	             writes, fsync, close (dd conv=fsync)
//	write-close  MiB/s: the same without fsync; the time includes close
//	             and the release that follows (roots: a clean header, no
//	             fsync)
//	read         MiB/s: the write-fsync file read in 128 KiB after a
//	             remount
//	smallfiles   files/s: 500 files of 1..16 KiB written and closed
//	             without fsync (the untar case; roots: no fsync, the file
//	             is new)
//	overwrite    sessions/s: open an existing 1 MiB file, write 4 KiB,
//	             close, 100 times (roots: DIRTY header at the first write,
//	             clean header at close, no fsync)
//
// It logs the medians, the min..max and the ratios roots/bound and
// roots/v1 of each row. Run:
// go test -run XXX -bench RootsStream -benchtime 1x ./internal/fstest/mounttest/
// with ENCRYPTFS_BENCH_ROUNDS (default 5).
func BenchmarkRootsStream(b *testing.B) {
	mib := envInt("ENCRYPTFS_BENCH_MIB", 256)
	rounds := envInt("ENCRYPTFS_BENCH_ROUNDS", 5)
	vs := [3]*mounttest.Vault{mounttest.NewBoundVault(b, nil), mounttest.NewRootsVault(b, nil), mounttest.NewVault(b, nil)}
	rows := []string{"write-fsync", "write-close", "read", "smallfiles", "overwrite"}
	res := map[string]*[3][]float64{}
	for _, r := range rows {
		res[r] = &[3][]float64{}
	}
	chunk := make([]byte, 128<<10)
	for i := range chunk {
		chunk[i] = byte(i * 7)
	}
	writeBig := func(p string, sync bool) float64 {
		t0 := time.Now()
		f, err := os.Create(p)
		mounttest.Must(b, err)
		for range mib * 8 {
			_, err := f.Write(chunk)
			mounttest.Must(b, err)
		}
		if sync {
			mounttest.Must(b, f.Sync())
		}
		mounttest.Must(b, f.Close())
		return float64(mib) / time.Since(t0).Seconds()
	}
	for b.Loop() {
		for round := range rounds {
			order := [][]int{{0, 1, 2}, {1, 2, 0}, {2, 0, 1}, {1, 0, 2}, {0, 2, 1}, {2, 1, 0}}[round%6]
			for _, ab := range order {
				v := vs[ab]
				res["write-fsync"][ab] = append(res["write-fsync"][ab], writeBig(filepath.Join(v.Mnt, "f"), true))
				res["write-close"][ab] = append(res["write-close"][ab], writeBig(filepath.Join(v.Mnt, "g"), false))
				v.Remount(b)
				t0 := time.Now()
				f, err := os.Open(filepath.Join(v.Mnt, "f"))
				mounttest.Must(b, err)
				buf := make([]byte, 128<<10)
				for {
					n, err := f.Read(buf)
					if n == 0 || err != nil {
						break
					}
				}
				f.Close()
				res["read"][ab] = append(res["read"][ab], float64(mib)/time.Since(t0).Seconds())
				dir := filepath.Join(v.Mnt, fmt.Sprintf("d%d", round))
				mounttest.Must(b, os.Mkdir(dir, 0o755))
				t0 = time.Now()
				for k := range 500 {
					mounttest.Must(b, os.WriteFile(filepath.Join(dir, strconv.Itoa(k)), chunk[:1024+(k*1237)%(15<<10)], 0o644))
				}
				res["smallfiles"][ab] = append(res["smallfiles"][ab], 500/time.Since(t0).Seconds())
				mounttest.Must(b, os.RemoveAll(dir))
				mounttest.Must(b, os.Remove(filepath.Join(v.Mnt, "f")))
				mounttest.Must(b, os.Remove(filepath.Join(v.Mnt, "g")))
				ow := filepath.Join(v.Mnt, "ow")
				mounttest.Must(b, os.WriteFile(ow, make([]byte, 1<<20), 0o644))
				t0 = time.Now()
				for k := range 100 {
					f, err := os.OpenFile(ow, os.O_WRONLY, 0)
					mounttest.Must(b, err)
					_, err = f.WriteAt(chunk[:4096], int64(k*7919)%(1<<20-4096))
					mounttest.Must(b, err)
					mounttest.Must(b, f.Close())
				}
				res["overwrite"][ab] = append(res["overwrite"][ab], 100/time.Since(t0).Seconds())
				mounttest.Must(b, os.Remove(ow))
			}
		}
	}
	for _, r := range rows {
		x := res[r]
		a, bb, v1 := median(x[0]), median(x[1]), median(x[2])
		b.Logf("%-12s v1 %8.1f (%.1f..%.1f)  bound %8.1f (%.1f..%.1f)  roots %8.1f (%.1f..%.1f)  roots/bound %.3f  roots/v1 %.3f",
			r, v1, slices.Min(x[2]), slices.Max(x[2]), a, slices.Min(x[0]), slices.Max(x[0]), bb, slices.Min(x[1]), slices.Max(x[1]), bb/a, bb/v1)
		// Per-round ratios (the sides of a round ran back to back): their
		// median and range are less at the mercy of the machine's load.
		var rb, rv []float64
		for i := range x[1] {
			rb, rv = append(rb, x[1][i]/x[0][i]), append(rv, x[1][i]/x[2][i])
		}
		b.Logf("%-12s per round: roots/bound %.3f (%.3f..%.3f)  roots/v1 %.3f (%.3f..%.3f)",
			r, median(rb), slices.Min(rb), slices.Max(rb), median(rv), slices.Min(rv), slices.Max(rv))
		b.ReportMetric(bb/a, r+"-ratio")
		b.ReportMetric(bb/v1, r+"-v1-ratio")
	}
}

func median(x []float64) float64 {
	s := slices.Clone(x)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}
