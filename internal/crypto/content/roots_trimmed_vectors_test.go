package content

import (
	"bytes"
	"crypto/sha256"
	"testing"

	"github.com/encryptfs/encryptfs/internal/crypto/internal/vectortest"
	"github.com/encryptfs/encryptfs/internal/crypto/keys"
)

// trimmedLeafVector is one trimmed leaf: a tag block given by its first
// bytes (Entries; the rest of the 4096 is zero) and its T.
type trimmedLeafVector struct {
	Name    string
	Entries vectortest.Hex
	Leaf    vectortest.Hex // SHA-256(0x02 ‖ block up to its last non-zero entry)
}

// trimmedRootVector is a root over trimmed leaves of a sparse file:
// Count tag blocks, of which those listed hold Entries (their first
// bytes) and the others are all zero.
type trimmedRootVector struct {
	Name   string
	FileID vectortest.Hex
	Size   uint64
	Gen    uint64
	Count  uint64
	Blocks []trimmedBlockVector
	Root   vectortest.Hex
}

type trimmedBlockVector struct {
	Index   uint64
	Entries vectortest.Hex
}

type trimmedVectors struct {
	Description  string
	ContentsKey  vectortest.Hex
	HeaderMACKey vectortest.Hex
	Leaves       []trimmedLeafVector
	Roots        []trimmedRootVector
	Files        []compactFileVector // compact layout, header flag TRIMMED
}

// blockOf is the tag block whose first bytes are entries.
func blockOf(entries []byte) []byte {
	b := make([]byte, TagBlockSize)
	copy(b, entries)
	return b
}

func generateTrimmedVectors(t *testing.T) trimmedVectors {
	k, err := keys.Derive(vectortest.MasterKey())
	if err != nil {
		t.Fatal(err)
	}
	v := trimmedVectors{
		Description: "Trimmed leaves (format v2, FileRoots + TrimmedLeaves, header flag TRIMMED 0x0008): " +
			"leaf = SHA-256(0x02 ‖ tag block up to and including its last non-zero 16-byte entry); node and root as roots-v2.json. " +
			"Files are in the compact layout (roots-compact-v2.json) with TRIMMED set.",
		ContentsKey:  k.Contents,
		HeaderMACKey: k.HeaderMAC,
	}
	rnd := vectortest.Rand("trimmed leaves vectors")
	entry := func() []byte { return vectortest.Bytes(t, rnd, TagSize) }
	zero := make([]byte, TagSize)
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	var full []byte
	for range TagEntries {
		full = append(full, entry()...)
	}
	for _, c := range []struct {
		name    string
		entries []byte
	}{
		{"all zero", nil},
		{"one chunk", entry()},
		{"hole then a chunk", cat(zero, entry())},
		{"a zero entry at the end is trimmed", cat(entry(), entry(), zero)},
		{"full block", full},
	} {
		v.Leaves = append(v.Leaves, trimmedLeafVector{c.name, c.entries, leafHex(TrimmedBlockHash(blockOf(c.entries)))})
	}
	s, err := NewRootsSuiteWith(AES256GCM, MinChunk, k.Contents, k.HeaderMAC, RootsOptions{Compact: true, Trimmed: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		size   uint64
		count  uint64
		blocks []trimmedBlockVector
	}{
		{"empty file", 0, 0, nil},
		{"one chunk", 5, 1, []trimmedBlockVector{{0, entry()}}},
		{"two levels: data in blocks 0 and 299 of 300, zero blocks between", 300*256*MinChunk - 7, 300,
			[]trimmedBlockVector{{0, cat(entry(), zero, entry())}, {299, full}}},
	} {
		var id FileID
		copy(id[:], vectortest.Bytes(t, rnd, FileIDSize))
		var blocks []BlockHash
		for _, b := range c.blocks {
			blocks = append(blocks, BlockHash{Index: b.Index, Hash: TrimmedBlockHash(blockOf(b.Entries))})
		}
		root, err := s.RootSparse(TrimmedLeaves, id, c.size, 3, c.count, blocks)
		if err != nil {
			t.Fatal(err)
		}
		v.Roots = append(v.Roots, trimmedRootVector{c.name, id[:], c.size, 3, c.count, c.blocks, root[:]})
	}
	for _, alg := range Algorithms() {
		s, err := NewRootsSuiteWith(alg, MinChunk, k.Contents, k.HeaderMAC, RootsOptions{Compact: true, Trimmed: true})
		if err != nil {
			t.Fatal(err)
		}
		v.Files = append(v.Files, compactFiles(t, s, rnd)...)
	}
	return v
}

func leafHex(h [sha256.Size]byte) vectortest.Hex { return h[:] }

// TestTrimmedVectors checks testdata/vectors/roots-trimmed-v2.json
// (rewrite it with -update): the leaves against an independent
// computation here (the block cut at its last non-zero entry), the roots
// against Root over every leaf listed (zero blocks included), and every
// stored file read from its own bytes as TestCompactVectors does, with
// TRIMMED in its header and its root over the trimmed leaf.
func TestTrimmedVectors(t *testing.T) {
	var file trimmedVectors
	vectortest.Check(t, "roots-trimmed-v2.json", generateTrimmedVectors(t), &file)
	for _, lv := range file.Leaves {
		cut := bytes.TrimRight(lv.Entries, "\x00")
		cut = lv.Entries[:(len(cut)+TagSize-1)/TagSize*TagSize]
		if want := sha256.Sum256(append([]byte{2}, cut...)); !bytes.Equal(want[:], lv.Leaf) {
			t.Errorf("%s: leaf %x, want %x", lv.Name, lv.Leaf, want)
		}
	}
	s, err := NewRootsSuiteWith(AES256GCM, MinChunk, file.ContentsKey, file.HeaderMACKey, RootsOptions{Compact: true, Trimmed: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, rv := range file.Roots {
		hashes := make([][sha256.Size]byte, rv.Count)
		for g := range hashes {
			hashes[g] = TrimmedBlockHash(make([]byte, TagBlockSize))
		}
		for _, b := range rv.Blocks {
			hashes[b.Index] = TrimmedBlockHash(blockOf(b.Entries))
		}
		root, err := s.Root(TrimmedLeaves, FileID(rv.FileID), rv.Size, rv.Gen, hashes)
		if err != nil || !bytes.Equal(root[:], rv.Root) {
			t.Errorf("%s: root %x, %v, want %x", rv.Name, root, err, rv.Root)
		}
	}
	for _, fv := range file.Files {
		s, err := NewRootsSuiteWith(fv.Algorithm, fv.ChunkSize, file.ContentsKey, file.HeaderMACKey, RootsOptions{Compact: true, Trimmed: true})
		if err != nil {
			t.Fatal(err)
		}
		h, err := s.ParseHeader(fv.Stored[:HeaderSizeV2])
		if err != nil || LeavesOf(h) != TrimmedLeaves {
			t.Fatalf("%s: header %+v, %v", fv.Algorithm, h, err)
		}
		fc, _ := s.File(h.FileID)
		n := (h.Size + uint64(fv.ChunkSize) - 1) / uint64(fv.ChunkSize)
		block := make([]byte, TagBlockSize)
		if n == 1 {
			copy(block, fc.ChunkTag(fv.Stored[s.ChunkOffset(0):]))
		}
		for _, p := range s.TagPieces(0, n) {
			copy(block[p.First*TagSize:], fv.Stored[p.Offset:p.Offset+int64(p.Count)*TagSize])
		}
		root, _ := s.Root(TrimmedLeaves, h.FileID, h.Size, h.Gen, [][sha256.Size]byte{TrimmedBlockHash(block)})
		if err := CheckRoot(h.Root, root); err != nil {
			t.Fatalf("%s: %v", fv.Algorithm, err)
		}
		whole, _ := s.Root(WholeLeaves, h.FileID, h.Size, h.Gen, [][sha256.Size]byte{TagBlockHash(block)})
		if CheckRoot(h.Root, whole) == nil {
			t.Fatalf("%s: the root also verifies with whole-block leaves", fv.Algorithm)
		}
	}
}

// TestTrimmedLen: the cut is at the last non-zero entry, whatever byte of
// it is non-zero.
func TestTrimmedLen(t *testing.T) {
	for i := range TagBlockSize {
		b := make([]byte, TagBlockSize)
		b[i] = 1
		if got, want := TrimmedLen(b), (i/TagSize+1)*TagSize; got != want {
			t.Fatalf("non-zero byte %d: TrimmedLen %d, want %d", i, got, want)
		}
	}
	if got := TrimmedLen(make([]byte, TagBlockSize)); got != 0 {
		t.Fatalf("all zero: %d", got)
	}
}

// TestHashBounded: under either rule, a block hashed with any bound at or
// past its last non-zero entry has the leaf Hash gives it, and is zero
// exactly when it is all zeros.
func TestHashBounded(t *testing.T) {
	for _, l := range []Leaves{WholeLeaves, TrimmedLeaves} {
		zeros := make([]byte, TagBlockSize)
		for _, top := range []int{0, 1, TagEntries} {
			if leaf, zero := l.HashBounded(zeros, top); !zero || leaf != l.Hash(zeros) {
				t.Fatalf("rule %d, zeros bounded at %d: zero %v, leaf %x, want %x", l, top, zero, leaf, l.Hash(zeros))
			}
		}
		for _, last := range []int{0, 1, 15, 16, 17, TagEntries - 1} {
			b := make([]byte, TagBlockSize)
			for i := 0; i <= last; i += 3 {
				b[i*TagSize+i%TagSize] = byte(i + 1)
			}
			b[last*TagSize+TagSize-1] = 0xff
			want := l.Hash(b)
			for _, top := range []int{last + 1, min(last+2, TagEntries), TagEntries} {
				if leaf, zero := l.HashBounded(b, top); zero || leaf != want {
					t.Fatalf("rule %d, last entry %d bounded at %d: zero %v, leaf %x, want %x", l, last, top, zero, leaf, want)
				}
			}
			if l == TrimmedLeaves && last > 0 {
				// A trimmed leaf below the bound is not the block's: the
				// bound is the caller's promise, not a hint.
				if leaf, _ := l.HashBounded(b, last); leaf == want {
					t.Fatalf("rule %d, last entry %d bounded below it: the block's own leaf", l, last)
				}
			}
		}
	}
}

// TestTrimmedHeaderFlag: TRIMMED is accepted by a suite with trimmed
// leaves only; a roots suite without them refuses it (a build without the
// feature must not read a root by the wrong rule).
func TestTrimmedHeaderFlag(t *testing.T) {
	ck, hk := testKey(32, 1), testKey(32, 2)
	with, _ := NewRootsSuiteWith(AES256GCM, MinChunk, ck, hk, RootsOptions{Trimmed: true})
	without, _ := NewRootsSuiteWith(AES256GCM, MinChunk, ck, hk, RootsOptions{})
	b := with.MarshalHeader(Header{Flags: FlagTrimmed, Size: 1, Gen: 1})
	if _, err := with.ParseHeader(b); err != nil {
		t.Fatalf("trimmed suite: %v", err)
	}
	if _, err := without.ParseHeader(b); err == nil {
		t.Fatal("a suite without trimmed leaves accepted TRIMMED")
	}
}
