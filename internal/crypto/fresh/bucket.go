package fresh

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Manifest buckets (feature flag "ManifestBuckets", docs/format.md §15,
// "Buckets"): a device's manifests are packed into at most 256 files, the
// manifests of the directories whose ID starts with byte b in the file
// BucketName(b), instead of one file per directory. Why: on every file
// system a file takes a whole block (4 KiB), and a manifest is about 1.7
// KiB, so one file per directory cost a vault of many directories more
// in blocks than in bytes (the kernel tree's 2,445 manifests: 4.2 MB of
// data in 10 MB of blocks).
//
// A bucket is a container, not a new cryptographic object: each manifest
// in it is the MAC'd manifest file, byte for byte, which verifies, names
// its device and directory, and is committed to by the epoch (its hash)
// exactly as a file of its own would. Dropping, swapping or replaying an
// entry is therefore what deleting, swapping or replaying a manifest
// file was, and is found the same way. The table is not MAC'd for that
// reason: the worst a forged table does is hide or misplace entries,
// which the epoch's counters and hashes catch.
//
//	"EFSB" ‖ version u8 = 1 ‖ n u32 ‖ n × (dirID (16) ‖ len u32) ‖
//	manifest_0 ‖ … ‖ manifest_{n-1}
//
// big-endian, the table sorted by dirID and unique, every dirID's first
// byte the bucket's, every len at least 1, the manifests in table order
// ending the file exactly.

const (
	bucketMagic = "EFSB"
	// BucketHeadSize is the fixed part of a bucket before its table.
	BucketHeadSize = 4 + 1 + 4
	// BucketSlotSize is one table entry: a dirID and a length.
	BucketSlotSize = IDSize + 4
	// BucketPrefix starts a bucket's name in a manifests directory.
	BucketPrefix = "bucket."
)

// BucketOf is the bucket of directory dirID: its first byte. Directory IDs
// are random, so a device's manifests spread evenly over the 256.
func BucketOf(dirID [IDSize]byte) byte { return dirID[0] }

// BucketName is the name of bucket b in a manifests directory: "bucket."
// and two lowercase hex digits. It never decodes as an ID (DecodeID wants
// 22 characters), so a reader of the one-file-per-directory layout skips
// it.
func BucketName(b byte) string { return BucketPrefix + fmt.Sprintf("%02x", b) }

// ParseBucketName is BucketName's inverse; ok is false for any other name.
func ParseBucketName(name string) (b byte, ok bool) {
	rest, ok := strings.CutPrefix(name, BucketPrefix)
	if !ok || len(rest) != 2 || strings.ToLower(rest) != rest {
		return 0, false
	}
	v, err := strconv.ParseUint(rest, 16, 8)
	return byte(v), err == nil
}

// BucketEntry is one manifest file in a bucket, under its directory's ID.
type BucketEntry struct {
	DirID [IDSize]byte
	File  []byte // the MAC'd manifest, as MarshalManifest made it
}

// MarshalBucket sorts entries by DirID and returns bucket b's file. Every
// entry must belong to b and be unique, and the file must fit in
// MaxFileSize.
func MarshalBucket(b byte, entries []BucketEntry) ([]byte, error) {
	slices.SortFunc(entries, func(x, y BucketEntry) int { return bytes.Compare(x.DirID[:], y.DirID[:]) })
	size := BucketHeadSize + len(entries)*BucketSlotSize
	for i, e := range entries {
		if BucketOf(e.DirID) != b || len(e.File) == 0 || (i > 0 && e.DirID == entries[i-1].DirID) {
			return nil, fmt.Errorf("fresh: entry %d of bucket %02x cannot be stored", i, b)
		}
		size += len(e.File)
	}
	if size > MaxFileSize {
		return nil, fmt.Errorf("fresh: bucket %02x would be %d bytes, over %d", b, size, MaxFileSize)
	}
	out := make([]byte, 0, size)
	out = append(out, bucketMagic...)
	out = append(out, fileVersion)
	out = binary.BigEndian.AppendUint32(out, uint32(len(entries)))
	for _, e := range entries {
		out = append(out, e.DirID[:]...)
		out = binary.BigEndian.AppendUint32(out, uint32(len(e.File)))
	}
	for _, e := range entries {
		out = append(out, e.File...)
	}
	return out, nil
}

// BucketSlot is where one manifest lies in a bucket file.
type BucketSlot struct {
	DirID    [IDSize]byte
	Off, Len int64
}

// ParseBucketHead reads the entry count from a bucket's first
// BucketHeadSize bytes and checks that its table fits in a file of size
// bytes (so that the count, read from CIPHERDIR, never sizes an
// allocation beyond the file).
func ParseBucketHead(head []byte, size int64) (n int, err error) {
	if len(head) < BucketHeadSize || size > MaxFileSize || string(head[:4]) != bucketMagic || head[4] != fileVersion {
		return 0, ErrMalformed
	}
	n64 := int64(binary.BigEndian.Uint32(head[5:9]))
	if BucketHeadSize+n64*BucketSlotSize > size {
		return 0, ErrMalformed
	}
	return int(n64), nil
}

// ParseBucketTable parses bucket b's table (n slots, as ParseBucketHead
// read) of a file of size bytes and returns where each manifest lies.
func ParseBucketTable(b byte, table []byte, n int, size int64) ([]BucketSlot, error) {
	if len(table) != n*BucketSlotSize {
		return nil, ErrMalformed
	}
	off := int64(BucketHeadSize + len(table))
	slots := make([]BucketSlot, n)
	for i := range slots {
		s := &slots[i]
		copy(s.DirID[:], table[i*BucketSlotSize:])
		s.Off = off
		s.Len = int64(binary.BigEndian.Uint32(table[i*BucketSlotSize+IDSize:]))
		if s.Len == 0 || BucketOf(s.DirID) != b || (i > 0 && bytes.Compare(s.DirID[:], slots[i-1].DirID[:]) <= 0) {
			return nil, ErrMalformed
		}
		off += s.Len
		if off > size {
			return nil, ErrMalformed
		}
	}
	if off != size {
		return nil, ErrMalformed
	}
	return slots, nil
}

// ParseBucket parses a whole bucket file of bucket b. The entries' Files
// alias file.
func ParseBucket(b byte, file []byte) ([]BucketEntry, error) {
	size := int64(len(file))
	n, err := ParseBucketHead(file, size)
	if err != nil {
		return nil, err
	}
	slots, err := ParseBucketTable(b, file[BucketHeadSize:BucketHeadSize+n*BucketSlotSize], n, size)
	if err != nil {
		return nil, err
	}
	out := make([]BucketEntry, len(slots))
	for i, s := range slots {
		out[i] = BucketEntry{DirID: s.DirID, File: file[s.Off : s.Off+s.Len]}
	}
	return out, nil
}

// FindSlot returns the slot of dirID in slots (sorted, as
// ParseBucketTable returns them).
func FindSlot(slots []BucketSlot, dirID [IDSize]byte) (BucketSlot, bool) {
	i, ok := slices.BinarySearchFunc(slots, dirID, func(s BucketSlot, id [IDSize]byte) int { return bytes.Compare(s.DirID[:], id[:]) })
	if !ok {
		return BucketSlot{}, false
	}
	return slots[i], true
}
