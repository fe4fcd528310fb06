package session

import (
	"errors"
	"fmt"

	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/crypto/content"
	"github.com/encryptfs/encryptfs/internal/crypto/keys"
	"github.com/encryptfs/encryptfs/internal/crypto/meta"
	"github.com/encryptfs/encryptfs/internal/crypto/names"
	"github.com/encryptfs/encryptfs/internal/crypto/reverse"
	"github.com/encryptfs/encryptfs/internal/engine"
)

// ErrReverseCipher: reverse mode needs aes-256-siv (derived nonces repeat
// for identical chunks, and only a misuse-resistant cipher stays secure
// then).
var ErrReverseCipher = errors.New("reverse: the config's cipher is not aes-256-siv")

// Reverse is an unlocked reverse-mode config: the ciphers the reverse view
// of PLAINDIR computes its encrypted names, contents and symlink targets
// with (docs/reverse.md), and the reverse engine built on them (View),
// which the view goes through. The subkeys themselves are wiped as soon as
// the ciphers are built; Close wipes the reverse key the deriver keeps.
type Reverse struct {
	dir    string
	params config.Params
	suite  *content.Suite
	names  *names.Cipher
	links  *meta.Symlinks
	derive *reverse.Deriver
	view   *engine.Reverse
}

// NewReverse builds the reverse session of PLAINDIR plainDir with
// parameters p (whose cipher must be aes-256-siv) from its master key,
// which stays the caller's to clear. It reads nothing from plainDir.
func NewReverse(plainDir string, p config.Params, masterKey []byte) (*Reverse, error) {
	return newReverse(plainDir, p, masterKey, nil)
}

// newReverse is NewReverse with the config bytes the view shows as
// encryptfs.conf (nil: the view reads the file when it opens PLAINDIR).
func newReverse(plainDir string, p config.Params, masterKey, raw []byte) (*Reverse, error) {
	if content.Algorithm(p.Cipher) != content.AES256SIV {
		return nil, fmt.Errorf("%w (it is %q)", ErrReverseCipher, p.Cipher)
	}
	k, err := keys.Derive(masterKey)
	if err != nil {
		return nil, err
	}
	defer k.Wipe() // every cipher below keeps its own copy
	r := &Reverse{dir: plainDir, params: p}
	if err := r.build(k); err != nil {
		return nil, err
	}
	r.view = engine.NewReverse(plainDir, r.suite, r.names, r.links, r.derive, raw)
	return r, nil
}

// build makes r's ciphers from the subkeys k. On failure it wipes the
// keys of what it had built (the content suite's and the deriver's), as
// Close would: the ones without keys to wipe come first.
func (r *Reverse) build(k *keys.Keys) (err error) {
	defer func() {
		if err != nil {
			r.wipe()
		}
	}()
	if r.names, err = names.New(k.Names); err != nil {
		return fmt.Errorf("reverse: %w", err)
	}
	if r.links, err = meta.NewSymlinks(k.Symlinks); err != nil {
		return fmt.Errorf("reverse: %w", err)
	}
	if r.suite, err = content.NewSuite(content.AES256SIV, r.params.ChunkSize, k.Contents, k.HeaderMAC); err != nil {
		return fmt.Errorf("reverse: %w", err)
	}
	if r.derive, err = reverse.New(k.Reverse); err != nil {
		return fmt.Errorf("reverse: %w", err)
	}
	return nil
}

// wipe wipes the reverse key and the content suite's keys, of those built.
func (r *Reverse) wipe() {
	if r.derive != nil {
		r.derive.Wipe()
	}
	if r.suite != nil {
		r.suite.Wipe()
	}
}

// OpenReverse unlocks PLAINDIR's reverse config (config.ReverseFileName)
// with password.
//
// Reverse configs are format 1 only: a format-2 file there is refused
// (config.ErrReverseV2) before any password is tried. Why: the view shows
// the reverse config as its encryptfs.conf, and a copy of the view must
// open as the format-1 forward vault it claims to be; key slots for
// reverse mode are not designed yet.
func OpenReverse(plainDir string, password []byte, o Options) (*Reverse, error) {
	if err := refuseV2Reverse(plainDir, &o); err != nil {
		return nil, err
	}
	c, master, err := o.unlock(plainDir, config.ReverseFileName, password)
	if err != nil {
		return nil, err
	}
	defer clear(master)
	return newReverseOf(plainDir, c, master)
}

// newReverseOf is NewReverse for the loaded config c, whose bytes the
// view shows as encryptfs.conf.
func newReverseOf(plainDir string, c *config.Config, masterKey []byte) (*Reverse, error) {
	raw := c.Raw()
	if raw == nil {
		var err error
		if raw, err = c.Marshal(); err != nil {
			return nil, err
		}
	}
	return newReverse(plainDir, c.Params, masterKey, raw)
}

// OpenReverseWithMasterKey opens PLAINDIR's reverse config with its master
// key. A PLAINDIR has no encrypted names to check the key against.
func OpenReverseWithMasterKey(plainDir string, masterKey []byte, o Options) (*Reverse, error) {
	c, err := o.loadConfig(plainDir, config.ReverseFileName)
	if err != nil {
		return nil, err
	}
	if c.IsV2() {
		return nil, config.ErrReverseV2
	}
	return newReverseOf(plainDir, c, masterKey)
}

// View returns the reverse engine: what the view of PLAINDIR shows,
// computed from the plaintext (engine.Reverse). It shows as encryptfs.conf
// the config bytes the session was opened with (OpenReverse,
// OpenReverseWithMasterKey), not the file read again, which could be a
// config swapped in since; a session built from parameters (NewReverse)
// has none, and the view reads the file when it opens PLAINDIR.
func (r *Reverse) View() *engine.Reverse { return r.view }

// Dir returns PLAINDIR.
func (r *Reverse) Dir() string { return r.dir }

// Params returns the reverse config's parameters.
func (r *Reverse) Params() config.Params { return r.params }

// Close wipes the reverse key and the content suite's keys. Call it after
// the view is unmounted.
func (r *Reverse) Close() error {
	r.wipe()
	return nil
}

// refuseV2Reverse loads the reverse config into o.Config (so it is read
// once) and refuses a format-2 one.
func refuseV2Reverse(plainDir string, o *Options) error {
	c, err := o.loadConfig(plainDir, config.ReverseFileName)
	if err != nil {
		return err
	}
	if c.IsV2() {
		return config.ErrReverseV2
	}
	o.Config = c
	return nil
}
