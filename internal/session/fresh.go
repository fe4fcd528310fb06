package session

import (
	"github.com/encryptfs/encryptfs/internal/config"
	fc "github.com/encryptfs/encryptfs/internal/crypto/fresh"
	"github.com/encryptfs/encryptfs/internal/fresh"
	"github.com/encryptfs/encryptfs/internal/tree"
)

// newFresh is New with freshness (Options.Freshness, which withParams
// sets from the feature flag "Freshness", freshopts.go): the engine tells
// freshness what each operation changed, by (directory ID, name)
// (engine.Changes), and freshness reads headers and names, and finds
// directories by ID, through the session.
// A writer (not Offline) starts batching once the session is built; Close
// ends it.
func newFresh(dir string, p config.Params, masterKey []byte, o Options) (*Session, error) {
	fo := *o.Freshness
	// The layout is the vault's, whoever built the options (tests of
	// vaults without flags choose it).
	fo.Buckets = fo.Buckets || p.Has(config.FlagManifestBuckets)
	// The freshness key comes from the vault's first key K_0 (epochs.go),
	// not the current one: manifests and epoch files written before a
	// revoke must keep verifying after it. (A revoked key's holder who
	// also writes CIPHERDIR could therefore forge them: format.md §3b
	// lists that gap with the links file's.)
	fk := masterKey
	if len(o.epochs) > 0 {
		fk = o.epochs[0]
	}
	fv, err := fresh.New(dir, fk, fo)
	if err != nil {
		return nil, err
	}
	o.Freshness, o.FreshnessUse = nil, FreshnessOff // built once, here
	s, err := New(dir, p, masterKey, o)
	if err != nil {
		fv.Close()
		return nil, err
	}
	s.fresh = fv
	if !fo.Offline {
		// Only a writer is told: an offline session records nothing.
		s.vault.SetChanges(fv.Changes())
	}
	fv.SetReader(freshReader(s))
	if !fo.Offline {
		if err := fv.Start(); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// freshReader gives freshness the session's header parser and names.
func freshReader(s *Session) fresh.Reader {
	suite := s.engine.Suite()
	return fresh.Reader{
		HeaderSize: suite.HeaderSize(),
		Header: func(b []byte) (id [fc.IDSize]byte, gen uint64, err error) {
			h, err := suite.ParseHeader(b)
			if err != nil {
				return id, 0, err
			}
			copy(id[:], h.FileID[:])
			// The gen of a header with roots (format.md §14, §16),
			// authenticated by the header MAC ParseHeader checked; 0
			// in a header without roots.
			return id, h.Gen, nil
		},
		Name: func(dirfd int, dirID []byte, b string) (string, error) {
			n, err := s.tree.DecryptName(tree.NewDir(dirfd, dirID, nil), b)
			if err != nil && s.tree.Epochs().Of(dirID) == 0 {
				// A directory of an epoch ≥ 1 (§3b) the session has
				// not opened yet: its names are under its epoch's
				// key, which the tree picks once it has read the ID
				// file (DirIDs.ReadUnchecked notes the epoch). Only on
				// failure: epoch-0 directories cost nothing more.
				if _, _, rerr := s.tree.DirIDs().ReadUnchecked(dirfd); rerr == nil && s.tree.Epochs().Of(dirID) != 0 {
					n, err = s.tree.DecryptName(tree.NewDir(dirfd, dirID, nil), b)
				}
			}
			return n.Plain, err
		},
		Locate: s.vault.Locate,
		Found:  s.vault.Found,
	}
}

// Freshness returns the session's freshness (nil without
// Options.Freshness).
func (s *Session) Freshness() *fresh.Vault { return s.fresh }
