package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"filippo.io/age/plugin"
	"github.com/encryptfs/encryptfs/internal/keyslot"
	"github.com/encryptfs/encryptfs/internal/session"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// unlockFlags are the ways every command that opens a forward vault
// unlocks it (docs/cli.md, "Unlocking"): a password (--passfile, --extpass,
// the terminal or stdin), a recovery key or the master key (--recovery-key,
// old name --masterkey),
// keyfiles, age identity files and systemd credentials. All of them end in
// one session.OpenWith (unlockVault).
type unlockFlags struct {
	src         passSource
	masterKey   bool
	keyfiles    []string
	identities  []string
	credentials []string
}

// register adds the unlock flags to fs, in the Unlock group. what names
// the password ("password", "current password").
func (u *unlockFlags) register(fs *pflag.FlagSet, what string) {
	passSourceFlags(fs, &u.src, what)
	masterKeyFlag(fs, &u.masterKey, "unlock with the recovery key init printed (format 1: the master key), asked for on the terminal or read from stdin, instead of a password")
	fs.StringArrayVar(&u.keyfiles, "keyfile", nil, "unlock with the keyfile `FILE` (repeatable; format-2 vaults)")
	fs.StringArrayVarP(&u.identities, "identity", "i", nil, "unlock with the age identity file `FILE` (- for stdin): X25519, a plugin's (age-plugin-yubikey, -tpm, -fido2-hmac), passphrase-protected, or an SSH private key, ssh-ed25519 or ssh-rsa (repeatable; format-2 vaults)")
	fs.StringArrayVar(&u.credentials, "credential", nil, "unlock with the systemd credential `NAME`, $CREDENTIALS_DIRECTORY/NAME: a keyfile, identity file or password (repeatable)")
	mustMark(cobra.MarkFlagFilename(fs, "keyfile"))
	mustMark(cobra.MarkFlagFilename(fs, "identity"))
	flagGroup(fs, groupUnlock, "keyfile", "identity", "credential")
}

// nonPassword tells whether a credential other than a password is given.
func (u unlockFlags) nonPassword() bool {
	return u.masterKey || len(u.keyfiles) > 0 || len(u.identities) > 0 || len(u.credentials) > 0
}

// nonStdinUnlock tells whether u unlocks without reading stdin (a file,
// a program, a systemd credential), so that stdin can carry something
// else (key add -R -).
func (u unlockFlags) nonStdinUnlock() bool {
	return u.src != (passSource{}) || len(u.keyfiles) > 0 || len(u.credentials) > 0 ||
		(len(u.identities) > 0 && !slices.Contains(u.identities, "-"))
}

// check refuses contradictory flags before anything is read.
func (u unlockFlags) check() error {
	if u.masterKey && u.src != (passSource{}) {
		return usageErrorf("--recovery-key replaces the password; drop --passfile/--extpass")
	}
	if n := slices.Index(u.identities, "-"); n >= 0 && (u.masterKey || slices.Contains(u.identities[n+1:], "-")) {
		return usageErrorf("-i - reads stdin, which can be read only once: give the other credential from a file")
	}
	for _, name := range u.credentials {
		if name == "" || name == "." || name == ".." || strings.ContainsRune(name, '/') {
			return usageErrorf("--credential %q: a credential name is a file name in $CREDENTIALS_DIRECTORY, without '/'", name)
		}
	}
	return nil
}

// credentials reads everything u offers for the config c (except the
// master key, see unlockVault) into keyslot credentials; wipe clears
// them. The password is read lazily, only if no other credential opened
// a slot; and when another credential was given, only from
// --passfile/--extpass or a terminal, so that an unattended unlock with a
// wrong keyfile or identity fails as "no slot opens" (3) instead of
// waiting for a password on stdin.
func (a *App) credentials(c *session.Config, u unlockFlags, prompt string) (cr keyslot.Credentials, wipe func(), err error) {
	wipe = func() {
		for _, k := range cr.Keyfiles {
			clear(k)
		}
		for _, k := range cr.RecoveryKeys {
			clear(k)
		}
	}
	if !c.IsV2() && (len(u.keyfiles) > 0 || len(u.identities) > 0) {
		return cr, wipe, errorfCode(ExitUnsupported, "this is a format-1 vault: it opens only with its password or master key (encryptfs upgrade adds key slots)")
	}
	if u.src != (passSource{}) {
		cr.Password = func() ([]byte, error) { return a.readPassword(u.src, prompt, false) }
	}
	opts := keyslot.IdentityOptions{UI: a.pluginUI()}
	for _, path := range u.keyfiles {
		k, err := keyslot.ReadKeyfile(path)
		if err != nil {
			wipe()
			return cr, wipe, withCode(ExitPassword, err)
		}
		cr.Keyfiles = append(cr.Keyfiles, k)
	}
	for _, path := range u.identities {
		var data []byte
		if path == "-" {
			data, err = a.readStdinAll(keyslot.MaxIdentityFile)
		} else {
			data, err = readSmallFile(path, keyslot.MaxIdentityFile)
		}
		if err != nil {
			wipe()
			return cr, wipe, withCode(ExitPassword, fmt.Errorf("identity: %w", err))
		}
		o := opts
		o.Passphrase = a.identityPassphrase(path)
		ids, err := keyslot.ParseIdentities(data, o)
		clear(data)
		if err != nil {
			wipe()
			return cr, wipe, withCode(ExitPassword, fmt.Errorf("identity %s: %w", path, err))
		}
		cr.Identities = append(cr.Identities, ids...)
	}
	for _, name := range u.credentials {
		if err := a.readCredential(name, opts, &cr); err != nil {
			wipe()
			return cr, wipe, err
		}
	}
	if cr.Password == nil && (!u.nonPassword() || a.stdinIsTerminal()) && !u.masterKey {
		cr.Password = func() ([]byte, error) { return a.readPassword(u.src, prompt, false) }
	}
	return cr, wipe, nil
}

// credentialsDirEnv is where systemd puts a unit's credentials
// (LoadCredential=, LoadCredentialEncrypted=, SetCredential=).
const credentialsDirEnv = "CREDENTIALS_DIRECTORY"

// readCredential adds the systemd credential name to cr
// (keyslot.FromFile: an identity file, else a keyfile and a password).
func (a *App) readCredential(name string, o keyslot.IdentityOptions, cr *keyslot.Credentials) error {
	dir := os.Getenv(credentialsDirEnv)
	if dir == "" {
		return errorfCode(ExitPassword, "credential %s: $%s is not set (run encryptfs from a systemd unit with LoadCredential= or LoadCredentialEncrypted=)", name, credentialsDirEnv)
	}
	data, err := readSmallFile(filepath.Join(dir, name), keyslot.MaxKeyfile)
	if err != nil {
		return withCode(ExitPassword, fmt.Errorf("credential %s: %w", name, err))
	}
	defer clear(data)
	if err := keyslot.FromFile(data, o, cr); err != nil {
		return withCode(ExitPassword, fmt.Errorf("credential %s: %w", name, err))
	}
	return nil
}

// readStdinAll reads all of stdin, at most limit bytes: an identity file
// or a recipients file given as "-".
func (a *App) readStdinAll(limit int64) ([]byte, error) {
	if a.Stdin == nil {
		return nil, errors.New("stdin: nothing to read")
	}
	var r io.Reader = a.Stdin
	if a.stdinLines != nil {
		r = a.stdinLines // what a line read before left buffered comes first
	}
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		clear(data)
		return nil, fmt.Errorf("stdin: %w", err)
	}
	if int64(len(data)) > limit {
		clear(data)
		return nil, fmt.Errorf("stdin: more than %d bytes", limit)
	}
	return data, nil
}

// readSmallFile reads a whole file of at most limit bytes.
func readSmallFile(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if int64(len(data)) > limit {
		clear(data)
		return nil, fmt.Errorf("%s: larger than %d bytes", path, limit)
	}
	return data, nil
}

// identityPassphrase asks for the passphrase of a passphrase-protected
// identity file: on the terminal without echo, else the next line of stdin.
func (a *App) identityPassphrase(path string) func() ([]byte, error) {
	return func() ([]byte, error) {
		var pw []byte
		var err error
		if a.stdinIsTerminal() {
			pw, err = a.promptTerminal("Passphrase for identity "+displayName(path), false)
		} else {
			pw, err = a.readStdinLine("identity passphrase")
		}
		if err != nil {
			return nil, err
		}
		if len(pw) == 0 {
			return nil, errors.New("the identity passphrase is empty")
		}
		return pw, nil
	}
}

// pluginUI is how age plugins talk to the user: their messages ("touch
// your key") go to stderr; a PIN or a confirmation is asked on the
// terminal (age's own terminal UI, which opens /dev/tty), and refused
// without one (a systemd unit: the plugin must work without asking).
func (a *App) pluginUI() *plugin.ClientUI {
	printf := func(format string, v ...any) { fmt.Fprintf(a.Stderr, "encryptfs: "+format+"\n", v...) }
	if a.stdinIsTerminal() {
		return plugin.NewTerminalUI(printf, printf)
	}
	ui := keyslot.NonInteractiveUI()
	ui.DisplayMessage = func(name, message string) error {
		printf("%s plugin: %s", name, message)
		return nil
	}
	return ui
}

// unlockFlagsChanged tells whether any unlock flag was given.
func unlockFlagsChanged(cmd *cobra.Command) bool {
	for _, name := range []string{"passfile", "extpass", "recovery-key", "masterkey", "keyfile", "identity", "credential"} {
		if cmd.Flags().Changed(name) {
			return true
		}
	}
	return false
}
