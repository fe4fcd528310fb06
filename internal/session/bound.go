package session

import (
	"fmt"

	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/crypto/bind"
	"github.com/encryptfs/encryptfs/internal/crypto/content"
	"github.com/encryptfs/encryptfs/internal/crypto/keys"
	"github.com/encryptfs/encryptfs/internal/fileengine"
	"github.com/encryptfs/encryptfs/internal/tree"
)

// newBound is New for a vault with location binding (Options.BoundVaultID,
// which withParams sets from the feature flag "BoundLocations" and
// Params.VaultID): the binding
// key is derived from the master key (keys.LabelBinding), the content
// suite writes v2 headers, and the engine and the tree check bindings.
// It takes over k (wiped on failure).
func newBound(dir string, p config.Params, masterKey []byte, k *keys.Keys, eo fileengine.Options, o Options) (*Session, error) {
	bk, err := keys.DeriveBinding(masterKey)
	if err != nil {
		k.Wipe()
		return nil, err
	}
	defer clear(bk)
	binder, err := bind.New(bk)
	if err != nil {
		k.Wipe()
		return nil, err
	}
	newSuite := content.NewBoundSuite
	switch {
	case (o.CompactRoots || o.TrimmedLeaves) && !o.FileRoots:
		binder.Wipe()
		k.Wipe()
		return nil, fmt.Errorf("session: compact roots and trimmed leaves need file roots")
	case o.FileRoots:
		// Tag blocks and file roots (design §5); tag block 0 in pieces
		// and trimmed leaves as the flags say (format.md §16).
		ro := content.RootsOptions{Compact: o.CompactRoots, Trimmed: o.TrimmedLeaves}
		newSuite = func(alg content.Algorithm, cs int, ck, hk []byte) (*content.Suite, error) {
			return content.NewRootsSuiteWith(alg, cs, ck, hk, ro)
		}
	}
	suite, err := newSuite(content.Algorithm(p.Cipher), p.ChunkSize, k.Contents, k.HeaderMAC)
	if err != nil {
		binder.Wipe()
		k.Wipe()
		return nil, fmt.Errorf("session: content suite: %w", err)
	}
	eo.Binder = binder
	links := tree.NewLinkStore(o.Backing, dir, binder, eo.Rand)
	eo.Links = links
	engine := fileengine.NewEngine(suite, eo)
	t, err := tree.NewBound(k, eo.Rand, o.Backing, &tree.Binding{Binder: binder, VaultID: o.BoundVaultID, Engine: engine, Links: links})
	if err != nil {
		binder.Wipe()
		suite.Wipe()
		k.Wipe()
		return nil, err
	}
	return withVault(&Session{dir: dir, params: p, engine: engine, tree: t, fs: o.Backing, rand: eo.Rand, keys: k, binder: binder}), nil
}
