package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"log"
	"os"
	"path/filepath"

	"github.com/encryptfs/encryptfs/internal/mount"
	"github.com/encryptfs/encryptfs/internal/session"
	"github.com/spf13/pflag"
)

// Reverse mode (docs/reverse.md): `init --reverse PLAINDIR` writes
// PLAINDIR/.encryptfs.reverse.conf; `mount --reverse PLAINDIR MOUNTPOINT`
// shows a read-only encrypted view of PLAINDIR whose copy is a forward vault
// with the same password.

// reverseFlags are mount's reverse-mode options.
type reverseFlags struct {
	enabled  bool
	excludes []string
	oneFS    bool
}

// register adds --reverse and the repeatable --exclude to mount's flags.
func (r *reverseFlags) register(fs *pflag.FlagSet) {
	fs.BoolVar(&r.enabled, "reverse", false, "mount an encrypted read-only view of the plaintext directory given as CIPHERDIR (set up with init --reverse)")
	fs.Func("exclude", "with --reverse: hide entries whose relative path or base name matches this glob `PATTERN` (path.Match syntax; repeatable)", func(pat string) error {
		r.excludes = append(r.excludes, pat)
		return nil
	})
	fs.BoolVar(&r.oneFS, "one-file-system", false, "with --reverse: do not cross file system boundaries (like rsync -x); mount points below the directory show up empty")
	flagGroup(fs, groupReverse, "reverse", "exclude", "one-file-system")
}

// option consumes the reverse-mode -o options "reverse",
// "exclude=PATTERN" and "one_file_system"; it reports whether it used the
// option.
func (r *reverseFlags) option(key, val string, hasVal bool) bool {
	switch {
	case key == "reverse" && !hasVal:
		r.enabled = true
	case key == "exclude" && hasVal:
		r.excludes = append(r.excludes, val)
	case key == "one_file_system" && !hasVal:
		r.oneFS = true
	default:
		return false
	}
	return true
}

// reverseCipher checks init's --cipher for reverse mode, which always uses
// aes-256-siv: derived nonces repeat for identical chunks, and only SIV
// stays secure then. cipherSet is whether --cipher was given at all.
func reverseCipher(cipherName string, cipherSet bool) error {
	if !cipherSet || cipherName == "siv" || cipherName == string(session.AES256SIV) {
		return nil
	}
	return usageErrorf("init: --reverse always uses %s (derived nonces need a misuse-resistant cipher); drop --cipher %s", session.AES256SIV, cipherName)
}

// initReverse prepares the existing plaintext directory dir for reverse
// mounts: it writes dir/.encryptfs.reverse.conf (parameters p, aes-256-siv)
// wrapping a new master key under a new password, and shows the master key
// once. Nothing else in dir is touched.
func initReverse(a *App, dir string, p session.Params, src passSource) error {
	if err := checkDir(dir, ExitCipherDir, "PLAINDIR"); err != nil {
		return err
	}
	for _, name := range []string{session.ReverseConfigFileName, session.ConfigFileName} {
		if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
			return errorfCode(ExitCipherDir, "init: %s already has %s; it is already set up (or is a vault)", dir, name)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return withCode(ExitCipherDir, fmt.Errorf("init: %w", err))
		}
	}
	c, masterKey, err := newConfig(a, p, src)
	if err != nil {
		return err
	}
	defer clear(masterKey)
	if err := session.SaveReverseConfig(dir, c); err != nil {
		return withCode(ExitCipherDir, fmt.Errorf("init: %w", err))
	}
	fmt.Fprintf(a.Stdout, "Created reverse config %s (%s).\n", filepath.Join(dir, session.ReverseConfigFileName), describeParams(p))
	printMasterKey(a, a.Stdout, masterKey)
	fmt.Fprintf(a.Stdout, "Mount the encrypted view with: encryptfs mount --reverse %s MOUNTPOINT\n", dir)
	return nil
}

// loadReverseConfig loads PLAINDIR's reverse config, telling apart a
// missing directory, a directory never set up, and a corrupt config.
func (a *App) loadReverseConfig(dir string) (*session.Config, error) {
	if err := checkDir(dir, ExitCipherDir, "PLAINDIR"); err != nil {
		return nil, err
	}
	c, err := session.LoadReverseConfig(dir)
	if errors.Is(err, session.ErrConfigNotFound) {
		return nil, errorfCode(ExitCipherDir, "%s has no %s; set it up with: encryptfs init --reverse %s", dir, session.ReverseConfigFileName, dir)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	if session.Algorithm(c.Params.Cipher) != session.AES256SIV {
		return nil, errorfCode(ExitUnsupported, "%s: reverse mode needs cipher %s, the config has %s", dir, session.AES256SIV, c.Params.Cipher)
	}
	a.limitKDFMemory(c)
	return c, nil
}

// serveReverse is serve for --reverse: it unlocks c with secret (password
// or master key), mounts the read-only view of plainDir on mountPoint,
// reports readiness through ready (if not nil) and serves until unmounted
// or signalled.
func serveReverse(a *App, c *session.Config, plainDir, mountPoint string, m mountFlags, rev reverseFlags, secret []byte, logger *log.Logger, ready func() error) error {
	if m.idle > 0 {
		return usageErrorf("mount: --idle is not supported with --reverse")
	}
	open := session.OpenReverse
	if m.unlock.masterKey {
		open = session.OpenReverseWithMasterKey
	}
	s, err := open(plainDir, secret, session.Options{Config: c})
	if err != nil {
		return err
	}
	defer s.Close()
	root, err := mount.NewReverseRoot(s, mount.ReverseViewOptions{Excludes: rev.excludes, ForceOwner: m.forceOwner, OneFileSystem: rev.oneFS, Logger: logger})
	if errors.Is(err, mount.ErrPattern) {
		return withCode(ExitUsage, fmt.Errorf("mount: --exclude: %w", err))
	} else if err != nil {
		return withCode(ExitCipherDir, fmt.Errorf("mount: %w", err))
	}
	fsName := m.fsName
	if fsName == "" {
		fsName = plainDir
	}
	opts := mount.ReverseOptions{
		PlainDir: plainDir, MountPoint: mountPoint, Root: root,
		AllowOther: m.allowOther, Debug: m.debug, FsName: fsName, ExtraOptions: m.extra, Logger: logger,
	}
	if m.sharedStorage { // PLAINDIR changes a lot: show every change at once
		opts.CacheTimeout = -1
	}
	srv, err := mount.MountReverse(opts)
	if err != nil {
		return withCode(ExitMount, fmt.Errorf("mount %s: %w", mountPoint, err))
	}
	return runServer(srv, ready, logger, fmt.Sprintf("mounted the encrypted view of %s on %s (read-only)", plainDir, mountPoint), mountPoint)
}
