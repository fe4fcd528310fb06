package content

import (
	"crypto/hmac"
	"encoding/binary"
	"fmt"

	"github.com/encryptfs/encryptfs/internal/crypto/bind"
)

// The v2 header (docs/design/format-v2.md §4 and §5; docs/format.md "v2:
// location binding"): fixed size, so that chunk offsets stay a function of
// the index, and room for the fields of the later v2 parts, which are
// reserved (zero, under the MAC) until those parts fill them:
//
//	off  size
//	  0     2  version u16 = 2
//	  2     2  flags u16: SPARSE 0x0001 as in v1 (not in roots suites);
//	           DIRTY 0x0002 (roots suites only, roots.go); LINKS 0x0004
//	           (the bindings are in the links file, the slots are zero);
//	           TRIMMED 0x0008 (the root's leaves are trimmed: suites
//	           with trimmed leaves only, roots_trimmed.go)
//	  4     4  epoch u32: the master-key epoch of the header MAC key and
//	           the file key (epoch.go)
//	  8    16  fileID
//	 24     8  size u64 (roots suites; else reserved, 0)
//	 32     8  gen u64 (roots suites; else reserved, 0)
//	 40    16  root (roots suites, roots.go; else reserved, 0)
//	 56    48  bindings: 3 slots of 16 bytes, empty slots zero
//	104     8  reserved (0)
//	112    16  mac = HMAC-SHA256(header MAC key, bytes 0..111)[0:16]
//
// Why three binding slots: a file may have two names (a hard link), and a
// rename needs a free slot for the new name's binding before the old one
// is dropped (bind.go's order), so two names plus one spare.
// Why the v1 header MAC key: the version field and the length (112 bytes
// against 20) keep a v1 and a v2 header's MAC inputs apart.
const (
	HeaderSizeV2 = 128
	VersionV2    = 2
	BindingSlots = 3

	// FlagLinks (v2 only): the file has more names than the header's
	// slots can bind; its bindings are in its links file
	// (bind.LinksName, docs/format.md §14) and the slots are zero. Under
	// the header MAC, so the flag cannot be cleared to fall back to the
	// slots, nor set to point a file at a links file.
	FlagLinks = 0x0004

	// KnownFlagsV2 are the flags a v2 header may carry today.
	KnownFlagsV2 = FlagSparse | FlagLinks
	// KnownFlagsRoots are the flags of a roots suite's v2 header: DIRTY
	// and LINKS; no SPARSE, since a hole is a zero tag entry under the
	// root.
	KnownFlagsRoots = FlagDirty | FlagLinks

	v2MACOff      = 112
	v2BindingsOff = 56
	v2FileIDOff   = 8
)

// NewBoundSuite is NewSuite for a vault with location binding (format v2,
// feature flag "BoundLocations"): its files have 128-byte v2 headers with
// binding slots. The bindings themselves are computed by
// internal/crypto/bind; the suite only stores them under the header MAC.
func NewBoundSuite(alg Algorithm, chunkSize int, contentsKey, headerMACKey []byte) (*Suite, error) {
	s, err := NewSuite(alg, chunkSize, contentsKey, headerMACKey)
	if err != nil {
		return nil, err
	}
	s.bound = true
	return s, nil
}

// Bound reports whether the suite writes and reads v2 headers with
// bindings.
func (s *Suite) Bound() bool { return s.bound }

// HeaderSize is the size of a file header: 36 bytes in v1, 128 with
// location binding.
func (s *Suite) HeaderSize() int {
	if s.bound {
		return HeaderSizeV2
	}
	return HeaderSize
}

// putHeaderV2 puts the fields of v2 header h in b (HeaderSizeV2 bytes)
// and returns the part its MAC covers; roots: the suite keeps file roots.
func putHeaderV2(b []byte, h Header, roots bool) []byte {
	clear(b)
	binary.BigEndian.PutUint16(b[0:2], VersionV2)
	binary.BigEndian.PutUint16(b[2:4], h.Flags)
	binary.BigEndian.PutUint32(b[4:8], h.Epoch)
	copy(b[v2FileIDOff:v2FileIDOff+FileIDSize], h.FileID[:])
	if roots {
		binary.BigEndian.PutUint64(b[24:32], h.Size)
		binary.BigEndian.PutUint64(b[32:40], h.Gen)
		copy(b[40:56], h.Root[:])
	}
	for i, slot := range h.Bindings {
		copy(b[v2BindingsOff+i*bind.Size:], slot[:])
	}
	return b[:v2MACOff]
}

// parseHeaderV2 checks a v2 header: length, MAC first (constant time), then
// version, flags and the reserved fields, which must be zero.
func (s *Suite) parseHeaderV2(b []byte) (Header, error) {
	if len(b) != HeaderSizeV2 {
		return Header{}, fmt.Errorf("%w: %d bytes, want %d", ErrBadHeader, len(b), HeaderSizeV2)
	}
	// The epoch selects the MAC key before the MAC is checked; an epoch
	// changed by the storage selects another key (or none), so the MAC
	// fails: the field is authenticated like the rest.
	epoch := binary.BigEndian.Uint32(b[4:8])
	mac, ok := s.headerMAC(epoch, b[:v2MACOff])
	if !ok {
		return Header{}, s.noMACKey(epoch)
	}
	if !hmac.Equal(b[v2MACOff:], mac[:]) {
		return Header{}, fmt.Errorf("%w: MAC mismatch", ErrBadHeader)
	}
	if v := binary.BigEndian.Uint16(b[0:2]); v != VersionV2 {
		return Header{}, fmt.Errorf("%w: version %d", ErrBadHeader, v)
	}
	h := Header{Flags: binary.BigEndian.Uint16(b[2:4]), Epoch: epoch}
	known := uint16(KnownFlagsV2)
	switch {
	case s.trimmed:
		known = KnownFlagsRoots | FlagTrimmed
	case s.roots:
		known = KnownFlagsRoots
	}
	if h.Flags&^known != 0 {
		return Header{}, fmt.Errorf("%w: unknown flags %#04x", ErrBadHeader, h.Flags)
	}
	if !allZero(b[104:112]) || !s.roots && !allZero(b[24:56]) {
		return Header{}, fmt.Errorf("%w: reserved fields set", ErrBadHeader)
	}
	if s.roots {
		h.Size = binary.BigEndian.Uint64(b[24:32])
		h.Gen = binary.BigEndian.Uint64(b[32:40])
		copy(h.Root[:], b[40:56])
	}
	copy(h.FileID[:], b[v2FileIDOff:])
	for i := range h.Bindings {
		copy(h.Bindings[i][:], b[v2BindingsOff+i*bind.Size:])
	}
	if h.Flags&FlagLinks != 0 && !allZero(b[v2BindingsOff:v2BindingsOff+BindingSlots*bind.Size]) {
		return Header{}, fmt.Errorf("%w: LINKS with bindings in the header", ErrBadHeader)
	}
	return h, nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
