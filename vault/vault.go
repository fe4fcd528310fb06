// Package vault reads and writes an EncryptFS vault without FUSE: create or
// open a vault, then work with its files and directories through plaintext
// paths. It goes through the same engine as the mount (internal/engine,
// which the session owns), so what it writes is exactly what a mount
// would write.
//
// Paths are slash-separated and relative to the vault's root ("" and "/"
// are the root). Symbolic links inside the vault are never followed while
// resolving a path. Errors are *fs.PathError values whose underlying error
// is a syscall.Errno or one of the ErrXxx sentinels of this package, so
// errors.Is(err, fs.ErrNotExist) and friends work.
//
// The directories a Vault resolved are kept for about a second, so that
// calls on many entries of one directory do not walk from the root each
// time. What the Vault itself renames or removes is seen at once; a
// directory renamed in CIPHERDIR by someone else (a sync tool, a mount in
// another process) may be reached under its old path for up to a second,
// as through gocryptfs.
package vault

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/encryptfs/encryptfs/internal/display"
	"github.com/encryptfs/encryptfs/internal/engine"
	"github.com/encryptfs/encryptfs/internal/session"
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
	sess   *session.Session
	eng    *engine.Vault // sess.Vault(): directories, files, the open-file table
	master []byte
	dirs   *dirCache // directories resolved lately (dircache.go)

	mu     sync.Mutex
	closed bool
}

// Create makes a new vault in dir, which must exist and be empty, and
// returns it open. Show the user MasterKey once: it is the only way in
// without the password. It goes through the same creation code as
// encryptfs init (internal/session.Create).
func Create(dir string, password []byte, opts Options) (*Vault, error) {
	return create(dir, password, opts, session.Options{})
}

// create is Create with session options so (tests turn on location
// binding with so.BoundVaultID).
func create(dir string, password []byte, opts Options, so session.Options) (*Vault, error) {
	r := opts.Rand
	if r == nil {
		r = rand.Reader
	}
	// The defaults are drawn with a salt of their own, unused, as before
	// the creation code moved to session: a deterministic Rand gives the
	// same vault as it always did.
	base, err := session.NewKDFParams(r, session.DefaultKDFTime, session.DefaultKDFMemoryKiB, session.DefaultKDFThreads)
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
	k, err := session.NewKDFParams(r, t, m, th)
	if err != nil {
		return nil, err
	}
	if !display.Safe(opts.Creator) {
		return nil, fmt.Errorf("vault: create: Creator %q has control or non-printable characters", opts.Creator)
	}
	alg, chunk := opts.Cipher, opts.ChunkSize
	if alg == "" {
		alg = string(session.AES256GCM)
	}
	if chunk == 0 {
		chunk = session.DefaultChunkSize
	}
	s, master, err := session.Create(dir, password, session.CreateOptions{
		Params:  session.NewParams(alg, chunk, k),
		Creator: opts.Creator,
		Options: withRand(so, r),
	})
	if err != nil {
		return nil, err
	}
	defer clear(master)
	return fromSession(s, master)
}

func withRand(so session.Options, r io.Reader) session.Options {
	so.Rand = r
	return so
}

// Open unlocks the vault in dir with password.
func Open(dir string, password []byte) (*Vault, error) {
	s, err := session.Open(dir, password, session.Options{})
	if err != nil {
		return nil, err
	}
	return fromSession(s, nil)
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
	if len(masterKey) != session.MasterKeySize {
		return nil, session.ErrMasterKey
	}
	s, err := session.OpenWithMasterKey(dir, masterKey, session.Options{})
	if err != nil {
		return nil, err
	}
	return fromSession(s, masterKey)
}

// FromSession wraps a session unlocked by encryptfs's own CLI (which loads
// the config itself and bounds the KDF's memory) in a Vault, which then
// owns it: Close closes it. The session type is internal, so only this
// module can call it.
func FromSession(s *session.Session) (*Vault, error) {
	return fromSession(s, nil)
}

// fromSession wraps s, keeping a copy of master (nil when the caller has
// no use for MasterKey) for MasterKey. The session's engine is the
// vault's one way in: its directories, files and open-file table, shared
// with any other door of the session.
// On failure it closes s.
func fromSession(s *session.Session, master []byte) (*Vault, error) {
	if err := s.Vault().OpenRoot(); err != nil {
		s.Close()
		return nil, err
	}
	return &Vault{sess: s, eng: s.Vault(), master: append([]byte(nil), master...), dirs: newDirCache()}, nil
}

// SharedStorage tells v that others change its CIPHERDIR at the same
// time (a mount of the same vault, a sync tool: encryptfs serve
// --shared-storage), so that it keeps nothing it resolved: every call
// resolves its path again and sees their changes at once, where by
// default a directory renamed or replaced by another writer may be
// reached at its old place for up to a second (dircache.go). Call it
// before any other method.
func (v *Vault) SharedStorage() {
	v.dirs.mu.Lock()
	defer v.dirs.mu.Unlock()
	v.dirs.ttl = 0
}

// MasterKey returns a copy of the vault's 32-byte master key. It is as
// secret as the password: only for showing once after Create.
func (v *Vault) MasterKey() []byte { return append([]byte(nil), v.master...) }

// Dir returns the vault's backing directory (CIPHERDIR).
func (v *Vault) Dir() string { return v.sess.Dir() }

// Cipher returns the vault's content cipher name.
func (v *Vault) Cipher() string { return v.sess.Params().Cipher }

// ChunkSize returns the vault's plaintext chunk size.
func (v *Vault) ChunkSize() int { return v.sess.Params().ChunkSize }

// Close releases the vault and wipes its keys. Files still open are
// closed too.
func (v *Vault) Close() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed {
		return nil
	}
	v.closed = true
	v.dirs.close()
	err := errors.Join(v.eng.CloseFiles(), v.sess.Close())
	clear(v.master)
	return err
}
