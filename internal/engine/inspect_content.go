package engine

import (
	"errors"

	"github.com/encryptfs/encryptfs/internal/crypto/bind"
	"github.com/encryptfs/encryptfs/internal/crypto/content"
	"github.com/encryptfs/encryptfs/internal/fresh"
)

// The raw views of file contents an offline check (internal/fsck) needs:
// the errors it tells apart and what a header says, read under the
// vault's suite. fsck decides what is a finding; these say what is there.

// FileID identifies a file's contents (its header's file ID).
type FileID = content.FileID

// Suite is the vault's content suite (the session's engine has it).
type Suite = content.Suite

// IsBadHeader reports whether err is a header that fails authentication.
func IsBadHeader(err error) bool { return errors.Is(err, content.ErrBadHeader) }

// IsCorruptChunk reports whether err is a chunk that fails authentication.
func IsCorruptChunk(err error) bool { return errors.Is(err, content.ErrCorruptChunk) }

// IsBadLinks reports whether err is a links file that is missing, fails
// its MAC or is another file's (format v2).
func IsBadLinks(err error) bool { return errors.Is(err, bind.ErrBadLinks) }

// IsHole reports whether a stored chunk reads as a hole (all zero).
func IsHole(chunk []byte) bool { return content.IsHole(chunk) }

// LinksFileID returns the file ID of a header (raw, checked by its MAC
// under s) that keeps its bindings in a links file; ok false if the
// header does not authenticate or has no links file.
func LinksFileID(s *Suite, raw []byte) (id FileID, ok bool) {
	h, err := s.ParseHeader(raw)
	if err != nil || h.Flags&content.FlagLinks == 0 {
		return FileID{}, false
	}
	return h.FileID, true
}

// HeaderSizeV1 is the size of a header without location binding.
const HeaderSizeV1 = content.HeaderSize

// HeaderCandidate is a v1 header rebuilt from the file ID a damaged
// header holds, with the flags the engine may have chosen.
type HeaderCandidate struct {
	Header []byte
	Sparse bool // SPARSE set: all-zero chunks read as holes
}

// HeaderCandidates returns the headers a damaged v1 header raw (at least
// HeaderSizeV1 bytes) may have been, in the order to try them: no flags,
// then SPARSE (docs/format.md §5.4).
func HeaderCandidates(s *Suite, raw []byte) []HeaderCandidate {
	var h content.Header
	copy(h.FileID[:], raw[4:20])
	var out []HeaderCandidate
	for _, flags := range []uint16{0, content.FlagSparse} {
		h.Flags = flags
		out = append(out, HeaderCandidate{Header: s.MarshalHeader(h), Sparse: flags&content.FlagSparse != 0})
	}
	return out
}

// FreshRolledBack is the status of a freshness issue that went back in a
// way no sync explains.
const FreshRolledBack = fresh.RolledBack
