package fresh

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

func bucketEntries() []BucketEntry {
	a, b := [IDSize]byte{7, 2}, [IDSize]byte{7, 1}
	return []BucketEntry{{DirID: a, File: []byte("second")}, {DirID: b, File: []byte("first!!")}}
}

// TestBucketRoundTrip: entries come back sorted by directory ID, each at
// the slot its table gives.
func TestBucketRoundTrip(t *testing.T) {
	file, err := MarshalBucket(7, bucketEntries())
	if err != nil {
		t.Fatal(err)
	}
	if want := BucketHeadSize + 2*BucketSlotSize + 6 + 7; len(file) != want {
		t.Fatalf("size %d, want %d", len(file), want)
	}
	got, err := ParseBucket(7, file)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].DirID[1] != 1 || string(got[0].File) != "first!!" || string(got[1].File) != "second" {
		t.Fatalf("parsed %+v", got)
	}
	n, err := ParseBucketHead(file[:BucketHeadSize], int64(len(file)))
	if err != nil || n != 2 {
		t.Fatalf("head: %d, %v", n, err)
	}
	slots, err := ParseBucketTable(7, file[BucketHeadSize:BucketHeadSize+n*BucketSlotSize], n, int64(len(file)))
	if err != nil {
		t.Fatal(err)
	}
	s, ok := FindSlot(slots, [IDSize]byte{7, 2})
	if !ok || string(file[s.Off:s.Off+s.Len]) != "second" {
		t.Fatalf("slot %+v %v", s, ok)
	}
	if _, ok := FindSlot(slots, [IDSize]byte{7, 3}); ok {
		t.Fatal("found an entry that is not there")
	}
}

// TestBucketRefusesMalformed: every way a table can disagree with its file
// is ErrMalformed, never a panic or an allocation the file does not back.
func TestBucketRefusesMalformed(t *testing.T) {
	good, err := MarshalBucket(7, bucketEntries())
	if err != nil {
		t.Fatal(err)
	}
	edit := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(good)) }
	slot := func(i int) int { return BucketHeadSize + i*BucketSlotSize }
	cases := map[string][]byte{
		"empty":           nil,
		"magic":           edit(func(b []byte) []byte { b[0] = 'X'; return b }),
		"version":         edit(func(b []byte) []byte { b[4] = 2; return b }),
		"count too large": edit(func(b []byte) []byte { binary.BigEndian.PutUint32(b[5:], 1<<31); return b }),
		"count too small": edit(func(b []byte) []byte { binary.BigEndian.PutUint32(b[5:], 1); return b }),
		"truncated":       good[:len(good)-1],
		"trailing byte":   append(bytes.Clone(good), 0),
		"unsorted":        edit(func(b []byte) []byte { b[slot(1)+1] = 0; return b }),
		"duplicate":       edit(func(b []byte) []byte { b[slot(1)+1] = 1; return b }),
		"other bucket":    edit(func(b []byte) []byte { b[slot(0)] = 8; return b }),
		"zero length": edit(func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[slot(0)+IDSize:], 0)
			binary.BigEndian.PutUint32(b[slot(1)+IDSize:], 13)
			return b
		}),
		"length past end": edit(func(b []byte) []byte { binary.BigEndian.PutUint32(b[slot(1)+IDSize:], 1<<30); return b }),
	}
	for name, file := range cases {
		if _, err := ParseBucket(7, file); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := ParseBucket(8, good); !errors.Is(err, ErrMalformed) {
		t.Errorf("bucket 7 read as bucket 8: %v", err)
	}
}

// TestBucketMarshalRefuses: an entry of another bucket, an empty one and
// two of one directory are not stored.
func TestBucketMarshalRefuses(t *testing.T) {
	for name, es := range map[string][]BucketEntry{
		"other bucket": {{DirID: [IDSize]byte{8}, File: []byte("x")}},
		"empty file":   {{DirID: [IDSize]byte{7}}},
		"duplicate":    {{DirID: [IDSize]byte{7}, File: []byte("x")}, {DirID: [IDSize]byte{7}, File: []byte("y")}},
	} {
		if _, err := MarshalBucket(7, es); err == nil {
			t.Errorf("%s: stored", name)
		}
	}
}

func TestBucketName(t *testing.T) {
	for b := range 256 {
		got, ok := ParseBucketName(BucketName(byte(b)))
		if !ok || got != byte(b) {
			t.Fatalf("%d: %d %v", b, got, ok)
		}
	}
	for _, n := range []string{"bucket.0", "bucket.AB", "bucket.abc", "bucket.zz", "bucket.+1", "x.00"} {
		if _, ok := ParseBucketName(n); ok {
			t.Errorf("%q parsed", n)
		}
	}
	if _, ok := DecodeID(BucketName(0)); ok {
		t.Error("a bucket name decodes as a directory ID")
	}
}

// FuzzParseBucket: whatever the bytes, the parser answers without
// panicking, and what it accepts marshals back to the same bytes.
func FuzzParseBucket(f *testing.F) {
	good, _ := MarshalBucket(7, bucketEntries())
	f.Add(good)
	f.Add([]byte("EFSB\x01\x00\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, file []byte) {
		es, err := ParseBucket(7, file)
		if err != nil {
			return
		}
		back, err := MarshalBucket(7, es)
		if err != nil || !bytes.Equal(back, file) {
			t.Fatalf("accepted bytes do not round-trip: %v", err)
		}
	})
}
