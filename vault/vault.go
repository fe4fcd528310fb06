// Package vault reads and writes an EncryptFS vault without FUSE: create or
// open a vault, then work with its files and directories through plaintext
// paths. It goes through the same engine as the mount (internal/tree and
// internal/core), so what it writes is exactly what a mount would write.
//
// Paths are slash-separated and relative to the vault's root ("" and "/"
// are the root). Symbolic links inside the vault are never followed while
// resolving a path. Errors are *fs.PathError values whose underlying error
// is a syscall.Errno or one of the ErrXxx sentinels of this package, so
// errors.Is(err, fs.ErrNotExist) and friends work.
package vault

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/core"
	"github.com/encryptfs/encryptfs/internal/crypto/content"
	"github.com/encryptfs/encryptfs/internal/crypto/kdf"
	"github.com/encryptfs/encryptfs/internal/crypto/keys"
	"github.com/encryptfs/encryptfs/internal/tree"
)

// Options configure Create. The zero value gives the defaults.
type Options struct {
	Cipher    string // "aes-256-gcm" (default) or "xchacha20-poly1305"
	ChunkSize int    // plaintext bytes per chunk; 0: content.DefaultChunkSize (16 KiB)
	// Argon2id cost; zero fields take the defaults (about 1 s). The floor
	// (KDFTime 1, KDFMemoryKiB 8192, KDFThreads 1) is meant for tests.
	KDFTime      uint32
	KDFMemoryKiB uint32
	KDFThreads   uint8
	Creator      string    // informational; default "encryptfs"
	Rand         io.Reader // nil: crypto/rand
}

// Vault is an open vault. Its methods are safe for concurrent use.
type Vault struct {
	dir    string
	rootfd int
	tree   *tree.Tree
	params config.Params
	master []byte

	mu     sync.Mutex
	closed bool
	files  *core.Table[*openInode] // one core.File per backing inode
}

// Create makes a new vault in dir, which must exist and be empty, and
// returns it open. Show the user MasterKey once: it is the only way in
// without the password.
func Create(dir string, password []byte, opts Options) (*Vault, error) {
	r := opts.Rand
	if r == nil {
		r = rand.Reader
	}
	base, err := kdf.Default(r)
	if err != nil {
		return nil, err
	}
	t, m, th := base.Time, base.MemoryKiB, base.Threads
	if opts.KDFTime != 0 {
		t = opts.KDFTime
	}
	if opts.KDFMemoryKiB != 0 {
		m = opts.KDFMemoryKiB
	}
	if opts.KDFThreads != 0 {
		th = opts.KDFThreads
	}
	k, err := kdf.New(r, t, m, th)
	if err != nil {
		return nil, err
	}
	if !printable(opts.Creator) {
		return nil, fmt.Errorf("vault: create: Creator %q has control or non-printable characters", opts.Creator)
	}
	alg, chunk := opts.Cipher, opts.ChunkSize
	if alg == "" {
		alg = string(content.AES256GCM)
	}
	if chunk == 0 {
		chunk = content.DefaultChunkSize
	}
	p := config.NewParams(alg, chunk, k)
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if err := checkEmpty(dir); err != nil {
		return nil, err
	}
	c, master, err := config.Create(p, password, r)
	if err != nil {
		return nil, err
	}
	if opts.Creator != "" {
		c.Creator = opts.Creator
	}
	v, err := newVault(dir, p, master, r)
	clear(master)
	if err != nil {
		return nil, err
	}
	if _, err := v.tree.InitRoot(v.rootfd); err != nil {
		v.Close()
		return nil, fmt.Errorf("vault: create: %w", err)
	}
	if err := c.Save(dir); err != nil {
		v.Close()
		return nil, err
	}
	return v, nil
}

// Open unlocks the vault in dir with password.
func Open(dir string, password []byte) (*Vault, error) {
	c, err := config.Load(dir)
	if err != nil {
		return nil, err
	}
	master, err := c.Unlock(password)
	if err != nil {
		return nil, err
	}
	defer clear(master)
	return newVault(dir, c.Params, master, nil)
}

// OpenWithMasterKey opens the vault in dir with its master key (for a
// forgotten password). A wrong key is only noticed when a name or file
// fails to decrypt.
//
// Without the password the config's Params are not authenticated, so they
// are taken as they stand; an attacker's edit can only make reads fail,
// never return wrong plaintext or weaken what is written (docs/format.md
// §3, "The master-key paths"): the cipher name is part of every per-file
// key, so another cipher fails every chunk's tag; another chunk size moves
// every tag but in files of one chunk, which read the same either way;
// Reverse is refused by the engine and the feature flags have one valid
// set. New data is sealed under the master key with one of v1's AEADs in
// any case (what is written under forged Params fails to read under the
// real ones: loud, not silent). Nothing here writes a config.
func OpenWithMasterKey(dir string, masterKey []byte) (*Vault, error) {
	c, err := config.Load(dir)
	if err != nil {
		return nil, err
	}
	return newVault(dir, c.Params, masterKey, nil)
}

func newVault(dir string, p config.Params, master []byte, r io.Reader) (*Vault, error) {
	if len(master) != keys.MasterKeySize {
		return nil, keys.ErrMasterKey
	}
	opts := core.DefaultOptions()
	if r != nil {
		opts.Rand = r
	}
	t, err := tree.New(p, master, opts)
	if err != nil {
		return nil, err
	}
	rootfd, err := backing.OpenRoot(dir)
	if err != nil {
		t.Wipe()
		return nil, err
	}
	return &Vault{
		dir: dir, rootfd: rootfd, tree: t, params: p,
		master: append([]byte(nil), master...),
		files:  core.NewTable[*openInode](t.Engine()),
	}, nil
}

// MasterKey returns a copy of the vault's 32-byte master key. It is as
// secret as the password: only for showing once after Create.
func (v *Vault) MasterKey() []byte { return append([]byte(nil), v.master...) }

// Dir returns the vault's backing directory (CIPHERDIR).
func (v *Vault) Dir() string { return v.dir }

// Cipher returns the vault's content cipher name.
func (v *Vault) Cipher() string { return v.params.Cipher }

// ChunkSize returns the vault's plaintext chunk size.
func (v *Vault) ChunkSize() int { return v.params.ChunkSize }

// Close releases the vault and wipes its keys. Files still open are
// closed too.
func (v *Vault) Close() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed {
		return nil
	}
	v.closed = true
	var errs []error
	errs = append(errs, v.files.Close())
	errs = append(errs, backing.Close(v.rootfd))
	v.tree.Wipe()
	clear(v.master)
	return errors.Join(errs...)
}

// printable reports whether s is valid UTF-8 of printable runes only: the
// Creator is shown by encryptfs info, and a control character or a bidi
// override there could disguise the output.
func printable(s string) bool {
	return utf8.ValidString(s) && strings.IndexFunc(s, func(r rune) bool { return !unicode.IsGraphic(r) }) < 0
}

// checkEmpty requires dir to be an existing, empty directory.
func checkEmpty(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	names, err := f.Readdirnames(1)
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("vault: %s: %w", dir, err)
	}
	if len(names) > 0 {
		return fmt.Errorf("vault: %s is not empty: %w", dir, fs.ErrExist)
	}
	return nil
}
