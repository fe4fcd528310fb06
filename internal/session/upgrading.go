package session

import (
	"fmt"
	"io"
	"slices"

	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/crypto/bind"
	"github.com/encryptfs/encryptfs/internal/crypto/content"
	"github.com/encryptfs/encryptfs/internal/crypto/keys"
)

// What the content upgrade (internal/upgrade) needs of the session it
// runs on, one opened with OpenWith and Options.Upgrading: the config's
// Params, sessions of the same keys with the Params it converts to, and
// the config edit that ends it. The master key and the epoch keys stay
// here.

// KeptParams returns the Params of the config the session keeps (a
// session opened with OpenWith or CreateWith; ErrNoKeyring otherwise),
// config.ErrNotV2 for a format-1 config.
func (s *Session) KeptParams() (config.Params, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ring == nil {
		return config.Params{}, ErrNoKeyring
	}
	if !s.ring.cfg.IsV2() {
		return config.Params{}, config.ErrNotV2
	}
	return s.ring.cfg.Params, nil
}

// Rand returns the session's source of randomness (Options.Rand, or
// crypto/rand).
func (s *Session) Rand() io.Reader { return s.rand }

// Binder returns the location-binding key (nil without binding).
func (s *Session) Binder() *bind.Binder { return s.binder }

// WithParams builds another session of s's vault, with the master key s
// keeps and Params p: every epoch's keys (objects keep the epoch they
// record), s's backing and randomness, freshness off (it only reads and
// writes objects; a vault with freshness keeps its records as they are).
// The content upgrade reads and writes with it the layout it converts
// to. The caller closes it.
func (s *Session) WithParams(p config.Params) (*Session, error) {
	return withKept(s, func(cfg *config.Config, master []byte) (*Session, error) {
		o, err := Options{Backing: s.fs, Rand: s.rand, FreshnessUse: FreshnessOff}.withEpochs(cfg, master)
		if err != nil {
			return nil, err
		}
		defer o.wipeEpochs()
		return New(s.dir, p, master, o)
	})
}

// UnrootedSuite is the content suite of v2 headers without roots, for
// vault Params p and the keys of every epoch the session keeps: the
// upgrade reads such headers (a bound vault's, of any epoch, §3b) and
// rewrites them with roots. The caller wipes it.
func (s *Session) UnrootedSuite(p config.Params) (*content.Suite, error) {
	return withKept(s, func(cfg *config.Config, master []byte) (*content.Suite, error) {
		o, err := Options{}.withEpochs(cfg, master)
		if err != nil {
			return nil, err
		}
		defer o.wipeEpochs()
		return unrootedSuite(p, append(slices.Clone(o.epochs), master))
	})
}

// withKept runs fn on a copy of the config and master key s keeps.
func withKept[T any](s *Session, fn func(cfg *config.Config, master []byte) (T, error)) (T, error) {
	s.mu.Lock()
	ring := s.ring
	var cfg config.Config
	var master []byte
	if ring != nil {
		cfg, master = *ring.cfg, slices.Clone(ring.master)
	}
	s.mu.Unlock()
	if ring == nil {
		var zero T
		return zero, ErrNoKeyring
	}
	defer clear(master)
	return fn(&cfg, master)
}

// unrootedSuite is UnrootedSuite for the vault's keys K_0 … K_e (one key
// without epochs).
func unrootedSuite(p config.Params, chain [][]byte) (*content.Suite, error) {
	var s *content.Suite
	for e, key := range chain {
		k, err := keys.Derive(key)
		if err != nil {
			if s != nil {
				s.Wipe()
			}
			return nil, err
		}
		if e == 0 {
			s, err = content.NewBoundSuite(content.Algorithm(p.Cipher), p.ChunkSize, k.Contents, k.HeaderMAC)
		} else {
			err = s.AddEpoch(uint32(e), k.Contents, k.HeaderMAC)
		}
		k.Wipe()
		if err != nil {
			if s != nil {
				s.Wipe()
			}
			return nil, fmt.Errorf("session: content suite: %w", err)
		}
	}
	return s, nil
}

// SetUpgradedParams writes Params p into the config (config.UpgradeParams,
// which keeps the slots' SlotParams; atomically, as every config edit):
// the content upgrade's last step, once every object is converted.
func (s *Session) SetUpgradedParams(p config.Params) error {
	return s.editConfig(func(c *config.Config, master []byte) error {
		up, err := c.UpgradeParams(master, p, s.rand)
		if err != nil {
			return err
		}
		*c = *up
		return nil
	})
}
