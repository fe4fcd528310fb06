package cli

import (
	"errors"
	"fmt"
	"log"

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
	giveWaitersProcs(srv)
	return runServer(srv, ready, logger, fmt.Sprintf("mounted the encrypted view of %s on %s (read-only)", plainDir, mountPoint), mountPoint)
}
