package content

import (
	"errors"
	"fmt"

	"github.com/encryptfs/encryptfs/internal/crypto/internal/macpool"
)

// Master-key epochs (format v2, feature flag "KeyEpochs"; docs/format.md
// §3b). A v2 header records the epoch it was written under; its header MAC
// key and its file key come from that epoch's key K_epoch. The suite's own
// keys (NewSuite's arguments) are epoch 0's, K_0's; AddEpoch gives it
// those of the later epochs, and SetEpoch the one new headers get. A v1
// suite has epoch 0 only.

// ErrUnknownEpoch: a header names an epoch whose keys the suite does not
// have (a header from a newer config, or an edited one). It wraps
// ErrBadHeader: to the reader it is a header that does not verify.
var ErrUnknownEpoch = fmt.Errorf("%w: its master-key epoch has no key here", ErrBadHeader)

// epochKeys holds the contents and header MAC keys of epochs 1..n.
type epochKeys struct {
	contents   [][]byte // [i] is epoch i+1's
	headerMACs [][]byte
	current    uint32 // the epoch new headers get
}

func (k *epochKeys) wipe() {
	for i := range k.contents {
		clear(k.contents[i])
		clear(k.headerMACs[i])
	}
}

// keysOf returns epoch e's contents and header MAC keys, or nils. The
// caller holds keyMu.
func (s *Suite) keysOf(e uint32) (contents, headerMAC []byte) {
	if e == 0 {
		return s.contentsKey, s.headerMACKey
	}
	if i := uint64(e) - 1; i < uint64(len(s.epochs.contents)) {
		return s.epochs.contents[i], s.epochs.headerMACs[i]
	}
	return nil, nil
}

// macsOf returns the states keyed with epoch e's header MAC key, or nil.
// The caller holds keyMu.
func (s *Suite) macsOf(e uint32) *macpool.Pool {
	if uint64(e) < uint64(len(s.headerMACs)) {
		return s.headerMACs[e]
	}
	return nil
}

// AddEpoch gives a bound suite the keys of the next epoch (1, 2, ... in
// order), derived from K_epoch exactly as NewSuite's are from K_0
// (keys.Derive: Contents and HeaderMAC). Call it before the suite is
// used. Why the same labels for every epoch: the epoch keys are
// independent random keys, so their subkeys are independent too.
func (s *Suite) AddEpoch(e uint32, contentsKey, headerMACKey []byte) error {
	if !s.bound {
		return errors.New("content: epochs need v2 headers (a bound suite)")
	}
	if len(contentsKey) != 32 || len(headerMACKey) != 32 {
		return fmt.Errorf("%w: contents and header MAC keys must be 32 bytes", ErrUnsupported)
	}
	s.keyMu.Lock()
	defer s.keyMu.Unlock()
	if uint64(e) != uint64(len(s.epochs.contents))+1 {
		return fmt.Errorf("content: epoch %d added after %d", e, len(s.epochs.contents))
	}
	s.epochs.contents = append(s.epochs.contents, append([]byte(nil), contentsKey...))
	mk := append([]byte(nil), headerMACKey...)
	s.epochs.headerMACs = append(s.epochs.headerMACs, mk)
	s.headerMACs = append(s.headerMACs, macpool.New(mk))
	return nil
}

// SetEpoch makes e, whose keys the suite has, the epoch of new headers.
func (s *Suite) SetEpoch(e uint32) error {
	s.keyMu.Lock()
	defer s.keyMu.Unlock()
	if c, _ := s.keysOf(e); c == nil {
		return fmt.Errorf("%w: epoch %d", ErrUnknownEpoch, e)
	}
	s.epochs.current = e
	return nil
}

// Epoch is the epoch new headers get (0 without epochs).
func (s *Suite) Epoch() uint32 {
	s.keyMu.RLock()
	defer s.keyMu.RUnlock()
	return s.epochs.current
}

// macKeyErr says why the header MAC of epoch e cannot be computed: the
// keys were wiped (ErrWiped), or epoch e has none here (ErrUnknownEpoch).
func (s *Suite) macKeyErr(e uint32) error {
	s.keyMu.RLock()
	defer s.keyMu.RUnlock()
	if s.wiped {
		return ErrWiped
	}
	return fmt.Errorf("%w (epoch %d)", ErrUnknownEpoch, e)
}

// noMACKey is ParseHeader's macKeyErr: after Wipe a header reads as bad.
func (s *Suite) noMACKey(e uint32) error {
	err := s.macKeyErr(e)
	if errors.Is(err, ErrWiped) {
		return fmt.Errorf("%w: %w", ErrBadHeader, err)
	}
	return err
}
