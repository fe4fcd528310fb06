package upgrade

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/crypto/content"
)

// File roots by the upgrade (docs/format.md §14 "Upgrading", §16): each
// file to convert (a v1 header, or a v2 header without roots) is copied
// into the roots layout with no decryption of its contents beyond a check:
// every stored chunk is opened with v1's rules (its index, the final flag
// on the last chunk; with SPARSE, an all-zero non-final chunk is a hole)
// before anything of the file is written, so a damaged file is reported
// instead of being given a root that would vouch for it. A chunk's tag
// entry is its AEAD tag (content.FileCipher.ChunkTag, the same rule the
// engine writes with), a hole's entry is zero and its region stays a
// hole; the header gets no SPARSE, the plaintext size, gen 1 and the root.
//
// Which files are done is told by their headers: a roots header has gen
// 1 or more, so its size/gen/root fields (reserved, zero, in a v2 header
// without roots) are not all zero and it does not parse as a header
// without roots; one that parses so is converted (again).

// errDamaged: a file's stored chunks do not authenticate (or its last
// chunk is cut); the upgrade leaves it, and the vault, as they are.
var errDamaged = errors.New("its contents do not authenticate (damaged; encryptfs fsck reports it)")

// srcHeaderSize is the size of f's current header.
func srcHeaderSize(f *upFile) int64 {
	if f.fromV2 {
		return content.HeaderSizeV2
	}
	return content.HeaderSize
}

// verifyChunks checks that every chunk of file f (srcfd, size bytes)
// authenticates: the scan's check, so that a damaged file blocks the
// upgrade before any object changes.
func (u *upgrader) verifyChunks(srcfd int, f *upFile, size int64) error {
	_, _, err := u.rootsChunks(srcfd, f, size, nil)
	return err
}

// copyRoots writes f's chunks into out at their roots offsets, its tag
// blocks, and header h completed with the size, gen 1 and the root.
func (u *upgrader) copyRoots(out *backing.ObservedFile, srcfd int, f *upFile, h content.Header, size int64) error {
	s := u.b.Engine().Suite()
	plain, entries, err := u.rootsChunks(srcfd, f, size, out)
	if err != nil {
		return err
	}
	hashes := make([][sha256.Size]byte, len(entries)/content.TagBlockSize)
	leaves := s.NewLeaves() // the rule of the roots the vault writes
	cs := int64(s.ChunkSize())
	chunks := uint64((plain + cs - 1) / cs)
	for g := range hashes {
		block := entries[g*content.TagBlockSize : (g+1)*content.TagBlockSize]
		hashes[g] = leaves.Hash(block)
		// The whole block, or in the compact layout the pieces of
		// block 0 the file has (none for one chunk).
		for _, p := range s.TagPieces(uint64(g), chunks) {
			if _, err := out.WriteAt(block[p.First*content.TagSize:(p.First+p.Count)*content.TagSize], p.Offset); err != nil {
				return err
			}
		}
	}
	h.Size, h.Gen = uint64(plain), 1
	h.Flags |= leaves.Flag()
	if h.Root, err = s.Root(leaves, h.FileID, h.Size, h.Gen, hashes); err != nil {
		return err
	}
	if _, err := out.WriteAt(s.MarshalHeader(h), 0); err != nil {
		return err
	}
	// The length the roots layout says (a header-only file keeps its
	// header): chunks end the file, but be exact.
	return out.Truncate(max(int64(s.HeaderSize()), s.CipherSize(plain)))
}

// rootsChunks reads the chunks of file f (srcfd, size bytes of backing),
// opens each with v1's rules and returns the plaintext size and the tag
// blocks (entries back to back); with out, it also copies each chunk that
// is not a hole to its roots offset in out.
func (u *upgrader) rootsChunks(srcfd int, f *upFile, size int64, out *backing.ObservedFile) (int64, []byte, error) {
	s := u.b.Engine().Suite()
	fc, err := s.FileOf(content.Header{FileID: f.hdr.FileID, Epoch: f.hdr.Epoch}) // the file key of its epoch (§3b)
	if err != nil {
		return 0, nil, err
	}
	hs := srcHeaderSize(f)
	ccs := int64(s.CipherChunkSize())
	body := max(size-hs, 0)
	n := (body + ccs - 1) / ccs
	if n > 0 && body-(n-1)*ccs <= int64(s.Overhead()) {
		return 0, nil, fmt.Errorf("%w: its last chunk is cut (%w)", errDamaged, content.ErrTruncated)
	}
	sparse := f.hdr.Flags&content.FlagSparse != 0
	entries := make([]byte, (n+content.TagEntries-1)/content.TagEntries*content.TagBlockSize)
	in := backing.NewFile(srcfd, nil)
	buf := make([]byte, ccs)
	plainBuf := make([]byte, 0, s.ChunkSize())
	for i := int64(0); i < n; i++ {
		chunk := buf[:min(ccs, body-i*ccs)]
		if k, err := in.ReadAt(chunk, hs+i*ccs); k != len(chunk) {
			if err == nil || errors.Is(err, io.EOF) {
				err = fmt.Errorf("the file shrank during the upgrade")
			}
			return 0, nil, err
		}
		final := i == n-1
		if sparse && !final && content.IsHole(chunk) {
			continue // a hole: zero entry, nothing written
		}
		if _, err := fc.Open(plainBuf[:0], chunk, uint64(i), final); err != nil {
			return 0, nil, fmt.Errorf("%w (%w)", errDamaged, err)
		}
		copy(entries[i*content.TagSize:], fc.ChunkTag(chunk))
		if out != nil {
			if _, err := out.WriteAt(chunk, s.ChunkOffset(uint64(i))); err != nil {
				return 0, nil, err
			}
		}
	}
	return body - n*int64(s.Overhead()), entries, nil
}
