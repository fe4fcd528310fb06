package content

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
)

// headerMACSize is the truncated HMAC-SHA256 length in the header.
// Why 16 bytes is safe: forging a header needs a 2^-128 guess per attempt,
// and headers are only checked online (each guess costs an I/O).
const headerMACSize = 16

// headerMAC computes HMAC-SHA256(header MAC key, the header's bytes before
// its MAC)[:16] (20 bytes in v1, 112 in v2), or reports false once the key
// was wiped.
// The key is that of epoch e (epoch.go; 0 in v1): false also for an epoch
// whose key the suite does not have.
func (s *Suite) headerMAC(e uint32, first20 []byte) ([]byte, bool) {
	s.keyMu.RLock()
	defer s.keyMu.RUnlock()
	if s.wiped {
		return nil, false
	}
	macs := s.macsOf(e)
	if macs == nil {
		return nil, false
	}
	m := macs.Get()
	defer macs.Put(m)
	m.Write(first20)
	return m.Sum(make([]byte, 0, sha256.Size))[:headerMACSize], true
}

// MarshalHeader returns the 36 header bytes with their MAC. Calling it
// after Wipe is a programmer error and panics.
func (s *Suite) MarshalHeader(h Header) []byte {
	if s.bound {
		return s.marshalHeaderV2(h)
	}
	b := make([]byte, HeaderSize)
	binary.BigEndian.PutUint16(b[0:2], Version)
	binary.BigEndian.PutUint16(b[2:4], h.Flags)
	copy(b[4:20], h.FileID[:])
	mac, ok := s.headerMAC(0, b[:20])
	if !ok {
		panic("content: MarshalHeader after Wipe")
	}
	copy(b[20:], mac)
	return b
}

// ParseHeader checks length, MAC (constant time), version and flags, or
// returns an error wrapping ErrBadHeader. The MAC is checked first, so a
// forged header never reveals which field made it invalid.
func (s *Suite) ParseHeader(b []byte) (Header, error) {
	if s.bound {
		return s.parseHeaderV2(b)
	}
	if len(b) != HeaderSize {
		return Header{}, fmt.Errorf("%w: %d bytes, want %d", ErrBadHeader, len(b), HeaderSize)
	}
	mac, ok := s.headerMAC(0, b[:20])
	if !ok {
		return Header{}, fmt.Errorf("%w: %w", ErrBadHeader, ErrWiped)
	}
	if !hmac.Equal(b[20:], mac) {
		return Header{}, fmt.Errorf("%w: MAC mismatch", ErrBadHeader)
	}
	if v := binary.BigEndian.Uint16(b[0:2]); v != Version {
		return Header{}, fmt.Errorf("%w: version %d", ErrBadHeader, v)
	}
	h := Header{Flags: binary.BigEndian.Uint16(b[2:4])}
	if h.Flags&^KnownFlags != 0 {
		return Header{}, fmt.Errorf("%w: unknown flags %#04x", ErrBadHeader, h.Flags)
	}
	copy(h.FileID[:], b[4:20])
	return h, nil
}
