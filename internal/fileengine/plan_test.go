package fileengine

import (
	"fmt"
	"testing"
)

// TestPlanWrite checks planWrite on a boundary table: offsets and lengths
// at 0, 1, chunk-1, chunk, chunk+1 and many chunks, writes past the end
// leaving holes, writes into holes, appends within the last chunk, grows.
func TestPlanWrite(t *testing.T) {
	const C = 100 // plaintext chunk; stored chunk 120, header 36
	l := layout{chunk: C, cipherChunk: C + 20, overhead: 20, maxSize: 1000 * C, header: 36}
	off := func(i uint64) int64 { return l.cipherOffset(i) }
	type want struct {
		first, last, newLast, runStart uint64
		resealOld, separate            bool
		mergeFirst, mergeLast          bool
		reserve                        [2]int64
		holes                          [2]uint64
		setSparse                      bool
	}
	for _, tc := range []struct {
		name            string
		oldSize         int64
		sparse          bool
		off, n, newSize int64 // newSize 0: max(old, off+n)
		w               want
	}{
		{"first byte", 0, false, 0, 1, 0, want{reserve: [2]int64{36, 36 + 21}}},
		{"first chunk-1", 0, false, 0, C - 1, 0, want{reserve: [2]int64{36, 36 + 119}}},
		{"first chunk", 0, false, 0, C, 0, want{reserve: [2]int64{36, 36 + 120}}},
		{"first chunk+1", 0, false, 0, C + 1, 0, want{last: 1, newLast: 1, reserve: [2]int64{36, 36 + 120 + 21}}},
		{"first many chunks", 0, false, 0, 5 * C, 0, want{last: 4, newLast: 4, reserve: [2]int64{36, 36 + 600}}},
		{"first write at 1", 0, false, 1, C, 0, want{last: 1, newLast: 1, mergeFirst: true, reserve: [2]int64{36, 36 + 120 + 21}}},
		{"first write past a hole", 0, false, C, 1, 0, want{first: 1, last: 1, newLast: 1, runStart: 1, reserve: [2]int64{off(1), off(1) + 21}, holes: [2]uint64{0, 1}, setSparse: true}},
		{"first write at chunk-1", 0, false, C - 1, 2, 0, want{last: 1, newLast: 1, mergeFirst: true, reserve: [2]int64{36, 36 + 120 + 21}}},
		{"append within the last chunk", 150, false, 150, 10, 0, want{first: 1, last: 1, newLast: 1, runStart: 1, mergeFirst: true, reserve: [2]int64{36 + 120 + 70, 36 + 120 + 80}}},
		{"append filling the last chunk", 150, false, 150, 50, 0, want{first: 1, last: 1, newLast: 1, runStart: 1, mergeFirst: true, reserve: [2]int64{36 + 120 + 70, 36 + 240}}},
		{"append at a boundary", 2 * C, false, 2 * C, 1, 0, want{first: 2, last: 2, newLast: 2, runStart: 1, resealOld: true, reserve: [2]int64{off(2), off(2) + 21}}},
		{"append across chunks", 150, false, 150, 2 * C, 0, want{first: 1, last: 3, newLast: 3, runStart: 1, mergeFirst: true, reserve: [2]int64{36 + 120 + 70, off(3) + 70}}},
		{"write past the end, one hole", 150, false, 3 * C, C, 0, want{first: 3, last: 3, newLast: 3, runStart: 3, resealOld: true, separate: true, reserve: [2]int64{off(3), off(4)}, holes: [2]uint64{2, 3}, setSparse: true}},
		{"write past the end, already sparse", 150, true, 5*C + 1, 1, 0, want{first: 5, last: 5, newLast: 5, runStart: 5, resealOld: true, separate: true, mergeFirst: true, reserve: [2]int64{off(5), off(5) + 22}, holes: [2]uint64{2, 5}}},
		{"write just past the last chunk", 150, false, 2 * C, C, 0, want{first: 2, last: 2, newLast: 2, runStart: 1, resealOld: true, reserve: [2]int64{36 + 120 + 70, off(3)}}},
		{"overwrite inside", 10 * C, false, 3*C + 1, C - 1, 0, want{first: 3, last: 3, newLast: 9, runStart: 3, mergeFirst: true}},
		{"overwrite across a boundary inside", 10 * C, false, 3*C + 50, C, 0, want{first: 3, last: 4, newLast: 9, runStart: 3, mergeFirst: true, mergeLast: true}},
		{"overwrite many chunks, edges partial", 10 * C, false, C + 1, 5 * C, 0, want{first: 1, last: 6, newLast: 9, runStart: 1, mergeFirst: true, mergeLast: true}},
		{"overwrite whole chunk", 10 * C, false, 3 * C, C, 0, want{first: 3, last: 3, newLast: 9, runStart: 3}},
		{"write into a hole of a sparse file", 10 * C, true, 4 * C, 2 * C, 0, want{first: 4, last: 5, newLast: 9, runStart: 4}},
		{"overwrite the tail and grow", 250, false, 150, 2 * C, 0, want{first: 1, last: 3, newLast: 3, runStart: 1, mergeFirst: true, reserve: [2]int64{36 + 240 + 70, off(3) + 70}}},
		{"grow inside the last chunk", 150, false, 180, 0, 180, want{first: 1, last: 1, newLast: 1, runStart: 1, mergeFirst: true, reserve: [2]int64{36 + 120 + 70, 36 + 120 + 100}}},
		{"grow to the next chunk", 150, false, 250, 0, 250, want{first: 2, last: 2, newLast: 2, runStart: 1, resealOld: true, mergeFirst: true, reserve: [2]int64{36 + 120 + 70, off(2) + 70}}},
		{"grow leaving holes", 150, false, 10 * C, 0, 10 * C, want{first: 9, last: 9, newLast: 9, runStart: 9, resealOld: true, separate: true, mergeFirst: true, reserve: [2]int64{off(9), off(10)}, holes: [2]uint64{2, 9}, setSparse: true}},
		{"grow an empty file by a chunk", 0, false, C, 0, C, want{mergeFirst: true, reserve: [2]int64{36, off(1)}}},
		{"grow an empty file leaving holes", 0, false, 3 * C, 0, 3 * C, want{first: 2, last: 2, newLast: 2, runStart: 2, mergeFirst: true, reserve: [2]int64{off(2), off(3)}, holes: [2]uint64{0, 2}, setSparse: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			newSize := tc.newSize
			if newSize == 0 {
				newSize = max(tc.oldSize, tc.off+tc.n)
			}
			p, err := planWrite(l, tc.oldSize, tc.oldSize > 0, tc.sparse, tc.off, tc.n, newSize)
			if err != nil {
				t.Fatal(err)
			}
			got := want{p.first, p.last, p.newLast, p.runStart, p.resealOld, p.separate, p.mergeFirst, p.mergeLast,
				[2]int64{p.reserveFrom, p.reserveTo}, [2]uint64{p.holesFrom, p.holesTo}, p.setSparse}
			if !p.growing {
				got.reserve = [2]int64{}
			}
			if got != tc.w {
				t.Errorf("\n got %+v\nwant %+v", got, tc.w)
			}
			if p.growing != (newSize > tc.oldSize) {
				t.Errorf("growing = %v", p.growing)
			}
		})
	}
	if _, err := planWrite(l, 0, false, false, l.maxSize, 1, l.maxSize+1); err != ErrTooLarge {
		t.Errorf("past the maximum: %v", err)
	}
}

// TestPlanPunch checks planPunch on a boundary table.
func TestPlanPunch(t *testing.T) {
	const C = 100
	l := layout{chunk: C, cipherChunk: C + 20, overhead: 20, maxSize: 1000 * C, header: 36}
	for _, tc := range []struct {
		size, off, end int64
		want           punchPlan
	}{
		{10 * C, 0, 1, punchPlan{headFrom: 0, headTo: 1}},
		{10 * C, 1, C - 1, punchPlan{headFrom: 1, headTo: C - 1}},
		{10 * C, 0, C, punchPlan{headFrom: 0, headTo: 0, holeFirst: 0, holeEnd: 1, tailFrom: C, tailTo: C}},
		{10 * C, 1, 3*C + 1, punchPlan{headFrom: 1, headTo: C, holeFirst: 1, holeEnd: 3, tailFrom: 3 * C, tailTo: 3*C + 1}},
		{10 * C, C - 1, C + 1, punchPlan{headFrom: C - 1, headTo: C + 1}},
		{10 * C, 5 * C, 10 * C, punchPlan{headFrom: 5 * C, headTo: 5 * C, holeFirst: 5, holeEnd: 9, tailFrom: 9 * C, tailTo: 10 * C}},
		{10*C - 50, 8 * C, 10*C - 50, punchPlan{headFrom: 8 * C, headTo: 8 * C, holeFirst: 8, holeEnd: 9, tailFrom: 9 * C, tailTo: 10*C - 50}},
		{C, 0, C, punchPlan{headFrom: 0, headTo: C}},
	} {
		t.Run(fmt.Sprintf("size%d_%d-%d", tc.size, tc.off, tc.end), func(t *testing.T) {
			if got := planPunch(l, tc.size, tc.off, tc.end); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// BenchmarkPlanWrite is the cost the plan adds to every write (an append
// of 128 KiB to a 1 MiB file: compare with a 128 KiB write, tens of µs).
func BenchmarkPlanWrite(b *testing.B) {
	l := layout{chunk: 16 << 10, cipherChunk: 16<<10 + 32, overhead: 32, maxSize: 1 << 62, header: 36}
	var sink writePlan
	for b.Loop() {
		p, _ := planWrite(l, 1<<20, true, false, 1<<20, 128<<10, 1<<20+128<<10)
		sink = p
	}
	_ = sink
}
