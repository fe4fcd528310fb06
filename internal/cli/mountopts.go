package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/encryptfs/encryptfs/internal/mount"
	"github.com/encryptfs/encryptfs/internal/session"
	"github.com/spf13/pflag"
)

// mountFlags are the mount command's options, from flags or from -o.
type mountFlags struct {
	foreground    bool
	readOnly      bool
	allowOther    bool
	sharedStorage bool
	showBad       bool
	forceOwner    *mount.Owner
	debug         bool
	idle          time.Duration
	fsName        string
	unlock        unlockFlags
	extra         []string // -o options passed on to the FUSE mount
	transport     string   // auto, uring or classic; "": $ENCRYPTFS_TRANSPORT, else auto
	rev           reverseFlags
	stateDir      string // freshness state directory (--state-dir, -o state_dir=); "": the default
	freshness     string // what a rolled-back vault does: warn (log, mount; "" too) or strict (refuse)

	notifyFD int // internal: set in the daemon child (pipe to the parent)
	secretFD int // internal: set in the daemon child (password or master key)
	// secretIsKey: internal: the secret on secretFD is the master key the
	// parent unlocked (every forward mount), not what the user typed.
	secretIsKey bool
}

func (m *mountFlags) register(fs *pflag.FlagSet) {
	m.unlock.register(fs, "password")
	fs.BoolVarP(&m.foreground, "foreground", "f", false, "stay in the foreground (log to stderr; Ctrl-C unmounts)")
	fs.FuncP("options", "o", "comma-separated mount `OPTIONS`, as from mount(8)/fstab (see docs/cli.md)", m.parseOptions)
	fs.BoolVar(&m.readOnly, "ro", false, "mount read-only")
	fs.BoolVar(&m.allowOther, "allow-other", false, "let other users access the mount (needs user_allow_other in /etc/fuse.conf unless root)")
	fs.BoolVar(&m.sharedStorage, "shared-storage", false, "the CIPHERDIR is changed by others too (network or sync folder): no caching of attributes or entries")
	fs.BoolVar(&m.showBad, "show-undecryptable", false, "list entries whose names do not decrypt as NAME"+session.BadNameSuffix+", to read, rename or remove them")
	fs.Func("force-owner", "show every entry as owned by `UID:GID` (numbers), e.g. for a disk moved between machines; implies --allow-other", m.setForceOwner)
	fs.DurationVar(&m.idle, "idle", 0, "unmount after this long without use (e.g. 30m; 0: never)")
	fs.StringVar(&m.fsName, "fsname", "", "file system `NAME` shown in /proc/mounts (default: CIPHERDIR)")
	flagGroup(fs, groupMountOpt, "foreground", "options", "ro", "allow-other", "shared-storage", "show-undecryptable", "force-owner", "idle", "fsname")
	registerStateDir(fs, &m.stateDir)
	fs.StringVar(&m.freshness, "freshness", "warn", "a vault that went back since this machine last saw it (format 2, docs/format.md §15): warn (log one line and mount) or strict (refuse, exit 28; after an unclean end of the last mount it warns)")
	m.rev.register(fs)
	fs.StringVar(&m.transport, "transport", "", "how requests reach the daemon: auto (io_uring when the kernel offers it, else classic), uring or classic (default $"+transportEnv+", else auto)")
	fs.BoolVar(&m.debug, "debug", false, "log every FUSE request (debugging only: the log shows plaintext names and data)")
	flagGroup(fs, groupAdvanced, "transport", "debug")
	fs.IntVar(&m.notifyFD, "internal-notify-fd", -1, "internal: used by the daemonized child")
	fs.IntVar(&m.secretFD, "internal-secret-fd", -1, "internal: used by the daemonized child")
	mustMark(fs.MarkHidden("internal-notify-fd"))
	fs.BoolVar(&m.secretIsKey, "internal-secret-is-key", false, "internal: used by the daemonized child")
	mustMark(fs.MarkHidden("internal-secret-fd"))
	mustMark(fs.MarkHidden("internal-secret-is-key"))
}

// fstabOnly are options mount(8) and mount.fuse3 consume or that only mean
// something in fstab; they are accepted and ignored.
var fstabOnly = map[string]bool{
	"defaults": true, "auto": true, "noauto": true, "user": true, "users": true, "nouser": true,
	"nofail": true, "_netdev": true, "rw": true, "owner": true, "group": true,
}

// kernelOptions are the -o options passed on to the FUSE mount as they
// are (mount(2) flags and the FUSE options fusermount3 knows that mean
// something here); any other option is refused before the vault is
// unlocked, not by the kernel after the KDF ran.
var kernelOptions = map[string]bool{
	"dev": true, "nodev": true, "suid": true, "nosuid": true, "exec": true, "noexec": true,
	"atime": true, "noatime": true, "diratime": true, "nodiratime": true,
	"relatime": true, "norelatime": true, "strictatime": true, "nostrictatime": true,
	"lazytime": true, "nolazytime": true, "sync": true, "async": true, "dirsync": true,
	"default_permissions": true,
}

// setForceOwner sets --force-owner UID:GID, which implies --allow-other:
// presenting other owners is for other users (as in gocryptfs).
func (m *mountFlags) setForceOwner(s string) error {
	o, err := mount.ParseOwner(s)
	if err != nil {
		return err
	}
	m.forceOwner, m.allowOther = o, true
	return nil
}

// parseOptions handles one -o argument: "ro,allow_other,passfile=/k".
func (m *mountFlags) parseOptions(s string) error {
	for _, opt := range strings.Split(s, ",") {
		key, val, hasVal := strings.Cut(opt, "=")
		if m.rev.option(key, val, hasVal) {
			continue
		}
		switch {
		case opt == "":
		case key == "ro":
			m.readOnly = true
		case key == "allow_other":
			m.allowOther = true
		case key == "shared_storage":
			m.sharedStorage = true
		case key == "show_undecryptable":
			m.showBad = true
		case key == "force_owner" && hasVal:
			if err := m.setForceOwner(val); err != nil {
				return err
			}
		case key == "debug":
			m.debug = true
		case key == "foreground":
			m.foreground = true
		case key == "recovery_key" || key == "masterkey":
			m.unlock.masterKey = true
		case key == "passfile" && hasVal:
			m.unlock.src.passfile = val
		case key == "extpass" && hasVal:
			m.unlock.src.extpass = val
		case key == "keyfile" && hasVal:
			m.unlock.keyfiles = append(m.unlock.keyfiles, val)
		case key == "identity" && hasVal:
			m.unlock.identities = append(m.unlock.identities, val)
		case key == "credential" && hasVal:
			m.unlock.credentials = append(m.unlock.credentials, val)
		case key == "fsname" && hasVal:
			m.fsName = val
		case key == "state_dir" && hasVal:
			m.stateDir = val
		case key == "freshness" && hasVal:
			m.freshness = val
		case key == "transport" && hasVal:
			m.transport = val
		case key == "idle" && hasVal:
			d, err := time.ParseDuration(val)
			if err != nil {
				return fmt.Errorf("idle: %v", err)
			}
			m.idle = d
		case fstabOnly[key], strings.HasPrefix(key, "x-"), key == "comment":
		case key == "passfile", key == "extpass", key == "keyfile", key == "identity", key == "credential", key == "fsname", key == "idle", key == "force_owner", key == "transport", key == "state_dir":
			return fmt.Errorf("option %q needs a value", key)
		case key == "nonempty":
			return fmt.Errorf("option nonempty is not supported: a mount would hide the files in MOUNTPOINT; mount on an empty directory")
		case kernelOptions[key] && !hasVal:
			m.extra = append(m.extra, opt)
		default:
			return fmt.Errorf("unknown option %q (see encryptfs mount --help)", opt)
		}
	}
	return nil
}

// transportEnv names the environment variable that sets the default of
// --transport, e.g. for every mount of a machine or a test run.
const transportEnv = "ENCRYPTFS_TRANSPORT"

// transportMode is the transport asked for: the flag, else the
// environment, else auto. Reverse mounts are served classic: asking one
// for io_uring with the flag is a usage error.
func (m *mountFlags) transportMode(getenv func(string) string) (mount.Transport, error) {
	s, from := m.transport, "--transport"
	if s == "" {
		s, from = getenv(transportEnv), transportEnv
	}
	mode, err := mount.ParseTransport(s)
	if err != nil {
		return "", usageErrorf("mount: %s: %v", from, err)
	}
	if m.rev.enabled && mode == mount.TransportURing && from == "--transport" {
		return "", usageErrorf("mount: --transport uring is for forward mounts; --reverse serves over /dev/fuse")
	}
	return mode, nil
}
