package content

import (
	"crypto/hmac"
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
func (s *Suite) headerMAC(e uint32, first20 []byte) (mac [headerMACSize]byte, ok bool) {
	s.keyMu.RLock()
	defer s.keyMu.RUnlock()
	if s.wiped {
		return mac, false
	}
	macs := s.macsOf(e)
	if macs == nil {
		return mac, false
	}
	return mac, macs.Sum(mac[:], first20)
}

// MarshalHeader returns the header bytes (s.HeaderSize(): 36, or 128
// for a bound suite) with their MAC. Calling it after Wipe is a
// programmer error and panics.
func (s *Suite) MarshalHeader(h Header) []byte {
	b := make([]byte, s.HeaderSize())
	if err := s.PutHeader(b, h); err != nil {
		panic("content: MarshalHeader: " + err.Error())
	}
	return b
}

// PutHeader is MarshalHeader into b, which must be HeaderSize() bytes,
// without an allocation: the engine puts a header in the buffer that
// carries chunk 0 too. It fails with ErrWiped after Wipe (a write racing
// a lock), and with ErrUnknownEpoch for an epoch without a key.
func (s *Suite) PutHeader(b []byte, h Header) error {
	if len(b) != s.HeaderSize() {
		panic(fmt.Sprintf("content: header buffer of %d bytes, want %d", len(b), s.HeaderSize()))
	}
	var mac [headerMACSize]byte
	var ok bool
	if s.bound {
		mac, ok = s.headerMAC(h.Epoch, putHeaderV2(b, h, s.roots))
	} else {
		binary.BigEndian.PutUint16(b[0:2], Version)
		binary.BigEndian.PutUint16(b[2:4], h.Flags)
		copy(b[4:20], h.FileID[:])
		mac, ok = s.headerMAC(0, b[:20])
	}
	if !ok {
		return s.macKeyErr(h.Epoch)
	}
	copy(b[len(b)-headerMACSize:], mac[:])
	return nil
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
	if !hmac.Equal(b[20:], mac[:]) {
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
