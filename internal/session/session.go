// Package session is the unlocked vault: the one place where a vault's
// config is unlocked, its subkeys derived and its content engine and name
// tree built. Every door into a vault goes through it: the forward mount
// (internal/mount, internal/forwardfs), the reverse view (internal/reversefs,
// through Reverse), fsck, the public vault package and, through those, the
// CLI. A Session owns the derived keys and wipes them on Close.
package session

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/crypto/bind"
	"github.com/encryptfs/encryptfs/internal/crypto/content"
	"github.com/encryptfs/encryptfs/internal/crypto/keys"
	"github.com/encryptfs/encryptfs/internal/engine"
	"github.com/encryptfs/encryptfs/internal/fault"
	"github.com/encryptfs/encryptfs/internal/fileengine"
	"github.com/encryptfs/encryptfs/internal/fresh"
	"github.com/encryptfs/encryptfs/internal/tree"
)

// Errors of the session layer.
var (
	// ErrReverse: the vault is a reverse-mode vault; forward mode refuses it.
	ErrReverse = tree.ErrReverse
	// ErrWrongMasterKey: no name in the vault's root decrypts with the
	// master key given (see CheckMasterKey).
	ErrWrongMasterKey = fault.New(fault.WrongPassword, "session: wrong master key: no file name in the vault's root decrypts with it")
	// ErrMasterKey: a master key of the wrong size.
	ErrMasterKey = keys.ErrMasterKey
)

// Options configure how a vault is unlocked and served. The zero value
// gives the defaults.
type Options struct {
	// Rand supplies file IDs, chunk nonces, directory IDs and the nonces
	// of symlinks and xattr values; nil means crypto/rand. Tests inject a
	// deterministic reader.
	Rand io.Reader
	// Engine are the content engine's options; nil: fileengine.DefaultOptions.
	// Rand above, if set, replaces Engine.Rand.
	Engine *fileengine.Options
	// MaxKDFMemoryKiB bounds the Argon2id memory unlocking with a password
	// may take (config.LimitKDFMemory); 0: no bound beyond kdf's own.
	MaxKDFMemoryKiB uint64
	// Backing makes every change the session's doors make to CIPHERDIR
	// through internal/tree and the vault package (file contents, names,
	// directory IDs, xattrs, fsyncs); nil: unobserved. Tests pass an FS
	// with an Observer to record them (internal/crashsim).
	Backing *backing.FS
	// BoundVaultID, if set (16 bytes), turns on location binding (format
	// v2, docs/format.md §14) with this VaultID as the root's parent ID.
	// New sets it from the config (withParams: feature flag
	// "BoundLocations" and Params.VaultID); tests set it to bind a vault
	// whose config does not say so.
	BoundVaultID []byte
	// Upgrading opens a vault whose content upgrade was interrupted
	// (internal/upgrade), which every other open refuses
	// (ErrUpgradeIncomplete). Only for upgrade.Content.
	Upgrading bool
	// Freshness, if set, turns on rollback detection (format v2,
	// docs/design/format-v2.md §6, format.md §15): see newFresh.
	Freshness *fresh.Options
	// FileRoots, with BoundVaultID, turns on file roots (format v2,
	// docs/design/format-v2.md §5, feature flag "FileRoots"): tag blocks
	// between the chunks and a root in every file header. withParams sets
	// it from the config's flag; tests set it to give roots to a vault
	// whose config does not say so.
	FileRoots bool
	// CompactRoots, with FileRoots, stores tag block 0 compactly
	// (feature flag "CompactRoots", docs/format.md §16).
	CompactRoots bool
	// TrimmedLeaves, with FileRoots, writes roots with trimmed leaves
	// and accepts TRIMMED headers (feature flag "TrimmedLeaves",
	// docs/format.md §16).
	TrimmedLeaves bool
	// FreshnessUse says what a session of a vault with the feature flag
	// "Freshness" does (freshopts.go): record (the zero value: every
	// door that may write), only check, or nothing. Ignored when
	// Freshness is set.
	FreshnessUse FreshnessUse
	// FreshnessStateDir is this machine's freshness state directory of
	// the vault; "": fresh.StateDir(fresh.DefaultStateRoot(os.Getenv),
	// VaultID). FreshnessLog receives the start-up report and batch
	// errors (the mount's log); nil: none.
	FreshnessStateDir string
	FreshnessLog      func(string)
	// FreshnessStrict: a recording session refuses a vault that went
	// back (fresh.Options.Strict, fresh.ErrRolledBack).
	FreshnessStrict bool
	// SeenDir is this machine's memory of vaults' configs (fresh.Memory,
	// docs/format.md §15a); "": none is kept or checked. With it, a
	// config at a lower master-key epoch than one this machine opened
	// the vault with is refused (fresh.ErrConfigRolledBack), as is, with
	// FreshnessStrict, one of a lower format or without a feature flag
	// seen before; otherwise that is logged (FreshnessLog) and listed by
	// Session.ConfigBack. SeenUse changes what is done with it.
	SeenDir string
	SeenUse SeenUse
	// Config is the vault's config when the caller has already loaded it
	// (the CLI does, to tell a missing vault from a corrupt config before
	// asking for the password); nil: Open and OpenWithMasterKey load it.
	Config *config.Config

	// epochs are the older epoch keys K_0 … K_{e-1} of a config with
	// master-key epochs (epochs.go, withEpochs); New then takes the
	// master key as K_e.
	epochs [][]byte
}

func (o Options) engineOptions() fileengine.Options {
	eo := fileengine.DefaultOptions()
	if o.Engine != nil {
		eo = *o.Engine
	}
	if o.Rand != nil {
		eo.Rand = o.Rand
	}
	if eo.Rand == nil {
		eo.Rand = rand.Reader
	}
	return eo
}

// Session is an unlocked forward-mode vault: its directory, parameters,
// subkeys, content engine and name tree. It is safe for concurrent use.
type Session struct {
	dir    string
	params config.Params
	engine *fileengine.Engine
	tree   *tree.Tree
	fs     *backing.FS
	rand   io.Reader // the engine's: salts, nonces and secrets of new key slots

	mu   sync.Mutex
	keys *keys.Keys // nil after Close
	ring *keyring   // config and master key kept by OpenWith/CreateWith; nil otherwise
	// binder holds the location-binding key (bound.go); nil in v1.
	binder *bind.Binder
	// epochBinders are the binders of epochs 1.. (epochs.go).
	epochBinders []*bind.Binder
	fresh        *fresh.Vault  // Options.Freshness; nil without
	vault        *engine.Vault // the engine every door goes through (engine.go)
	seen         *seenVault    // Options.SeenDir; nil without
}

// New builds the session of the vault in dir with parameters p from its
// master key. It reads nothing from dir: Open and OpenWithMasterKey load
// the config, tests build sessions of vaults they make themselves.
// masterKey stays the caller's to clear.
func New(dir string, p config.Params, masterKey []byte, o Options) (*Session, error) {
	if p.Reverse {
		return nil, ErrReverse
	}
	o, err := o.withParams(p)
	if err != nil {
		return nil, err
	}
	// Freshness first: it observes the backing the epochs' session is
	// built on, and its start check reads headers of every epoch.
	if o.Freshness != nil {
		return newFresh(dir, p, masterKey, o)
	}
	if len(o.epochs) > 0 {
		return newEpochs(dir, p, masterKey, o)
	}
	k, err := keys.Derive(masterKey)
	if err != nil {
		return nil, err
	}
	// The tree first: it has no keys to wipe on a later failure, while
	// the suite, built last, is never left behind unwiped (nothing after
	// it can fail).
	eo := o.engineOptions()
	if o.BoundVaultID != nil {
		return newBound(dir, p, masterKey, k, eo, o)
	}
	if o.FileRoots || o.CompactRoots || o.TrimmedLeaves {
		k.Wipe()
		return nil, errors.New("session: file roots need location binding (BoundVaultID)")
	}
	t, err := tree.New(k, eo.Rand, o.Backing)
	if err != nil {
		k.Wipe()
		return nil, err
	}
	suite, err := content.NewSuite(content.Algorithm(p.Cipher), p.ChunkSize, k.Contents, k.HeaderMAC)
	if err != nil {
		k.Wipe()
		return nil, fmt.Errorf("session: content suite: %w", err)
	}
	return withVault(&Session{dir: dir, params: p, engine: fileengine.NewEngine(suite, eo), tree: t, fs: o.Backing, rand: eo.Rand, keys: k}), nil
}

// loadConfig returns o.Config or loads dir's config, with the KDF memory
// bound of o applied.
func (o Options) loadConfig(dir, name string) (*config.Config, error) {
	c := o.Config
	if c == nil {
		var err error
		if c, err = config.LoadFile(dir, name); err != nil {
			return nil, err
		}
	}
	if o.MaxKDFMemoryKiB > 0 {
		c.LimitKDFMemory(o.MaxKDFMemoryKiB)
	}
	return c, nil
}

// Open unlocks the vault in dir with password (config.ErrWrongPassword if
// it does not unwrap the master key).
func Open(dir string, password []byte, o Options) (*Session, error) {
	c, err := o.loadConfig(dir, config.FileName)
	if err != nil {
		return nil, err
	}
	master, err := c.Unlock(password)
	if err != nil {
		return nil, err
	}
	defer clear(master)
	return o.openEpochs(dir, c, master)
}

// withParams maps the vault's Params onto the options that turn its
// format-2 features on: the one place where a config's feature flags
// become engine and tree behaviour, so that every door (mount and its
// daemon child, fsck, the offline tools, vault.Open) serves a vault as
// its config says. A BoundVaultID already set must agree with the
// config's.
func (o Options) withParams(p config.Params) (Options, error) {
	if p.Bound() {
		if o.BoundVaultID != nil && !bytes.Equal(o.BoundVaultID, p.VaultID) {
			return o, fmt.Errorf("session: Options.BoundVaultID differs from the config's VaultID")
		}
		o.BoundVaultID = p.VaultID
	}
	if p.Has(config.FlagFileRoots) {
		o.FileRoots = true
	}
	if p.Has(config.FlagCompactRoots) {
		o.CompactRoots = true
	}
	if p.Has(config.FlagTrimmedLeaves) {
		o.TrimmedLeaves = true
	}
	o.Freshness = o.freshnessFor(p)
	return o, nil
}

// unlock loads the config file name in dir and unwraps its master key with
// password; the caller clears the key.
func (o Options) unlock(dir, name string, password []byte) (*config.Config, []byte, error) {
	c, err := o.loadConfig(dir, name)
	if err != nil {
		return nil, nil, err
	}
	master, err := c.Unlock(password)
	if err != nil {
		return nil, nil, err
	}
	return c, master, nil
}

// OpenWithMasterKey opens the vault in dir with its master key (for a
// forgotten password). A wrong key is not noticed here; CheckMasterKey
// tells, where the vault has a name to try it on.
//
// Without the password the config's Params are not authenticated, so they
// are taken as they stand; an attacker's edit can only make reads fail,
// never return wrong plaintext or weaken what is written (docs/format.md
// §3, "The master-key paths").
//
// A format-2 config is different: its MAC, checked here under masterKey,
// authenticates Params and the slot set (ErrWrongMasterKey if it fails:
// a wrong key, or an edited config).
func OpenWithMasterKey(dir string, masterKey []byte, o Options) (*Session, error) {
	c, err := o.loadConfig(dir, config.FileName)
	if err != nil {
		return nil, err
	}
	if c.IsV2() {
		if err := c.VerifyMAC(masterKey); errors.Is(err, config.ErrTampered) {
			return nil, fmt.Errorf("%w (or the config was edited: its MAC does not verify under this key)", ErrWrongMasterKey)
		} else if err != nil {
			return nil, err
		}
	}
	return o.openEpochs(dir, c, masterKey)
}

// Dir returns the vault's backing directory (CIPHERDIR).
func (s *Session) Dir() string { return s.dir }

// Params returns the vault's parameters.
func (s *Session) Params() config.Params { return s.params }

// Engine returns the content engine: open regular files with
// Engine().Open on a backing fd.
func (s *Session) Engine() *fileengine.Engine { return s.engine }

// Tree returns the name tree: names, directory IDs, symlinks, xattrs.
func (s *Session) Tree() *tree.Tree { return s.tree }

// Backing returns Options.Backing: the doors make their own changes to
// CIPHERDIR (file contents, fsyncs of a parent directory) through it. It
// may be nil (unobserved), which is valid.
func (s *Session) Backing() *backing.FS { return s.fs }

// Close overwrites the session's copies of the subkeys and the content
// suite's copies of its keys. The ciphers built from them keep their own key
// schedules until garbage collected; Close is a best effort at unmount time,
// not a guarantee. Close is idempotent.
func (s *Session) Close() error {
	verr := s.vault.Close() // its open files settle through the keys
	ferr := s.fresh.Close() // its last batch reads through the keys
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.keys != nil {
		s.keys.Wipe()
		s.engine.Suite().Wipe()
		if s.binder != nil {
			s.binder.Wipe()
		}
		s.wipeEpochBinders()
		s.keys = nil
	}
	s.wipeRing()
	return errors.Join(verr, ferr)
}
