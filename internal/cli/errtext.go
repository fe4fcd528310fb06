package cli

import (
	"fmt"
	"regexp"
	"strings"
)

// Every error the user sees is one plain sentence that says what to do
// next (issue 20). The packages below the CLI prefix their errors with
// their own name ("config: ...", "tree: ..."), the Go convention that
// helps a developer read a log; for the user such a prefix is noise, and
// the CLI, the one place that prints, drops it (internalPrefix).

// rewordedError shows msg but still is (errors.Is, errors.As, fault.Of)
// the error it replaces, so exit codes and callers' checks do not change.
type rewordedError struct {
	msg string
	err error
}

func (e *rewordedError) Error() string { return e.msg }
func (e *rewordedError) Unwrap() error { return e.err }

// reword replaces err's text with a sentence for the user.
func reword(err error, format string, args ...any) error {
	return &rewordedError{msg: fmt.Sprintf(format, args...), err: err}
}

// internalPackages are the names the packages under internal/ (and vault)
// prefix their errors with. Some are command names too (mount, fsck,
// upgrade): at the start of a message such a name is the command's own
// prefix ("mount: --exclude needs --reverse") and stays.
var internalPackages = []string{
	"backing", "bind", "config", "content", "core", "crashsim", "dircursor", "fault",
	"forwardfs", "fresh", "fuseserver", "fuseuring", "kdf", "keys", "keyslot",
	"layers", "meta", "names", "reversefs", "session", "siv", "tree", "uring", "vault",
}

var commandPackages = []string{"mount", "fsck", "upgrade"}

// internalPrefix matches a package prefix at the start of a message or
// after a ": " (a wrapped error).
var internalPrefix = regexp.MustCompile(`(^|: )(` + strings.Join(internalPackages, "|") + `): |(: )(` + strings.Join(commandPackages, "|") + `): `)

// withoutInternalPrefixes drops the package prefixes from msg.
func withoutInternalPrefixes(msg string) string {
	for {
		next := internalPrefix.ReplaceAllString(msg, "$1$3")
		if next == msg {
			return msg
		}
		msg = next
	}
}

// wrongPasswordMessage is the one sentence for a password that does not
// unwrap the key, in every command (mount, fsck, ls ...): a wrong password
// and an edited KDF parameter cannot be told apart.
const wrongPasswordMessage = "wrong password (or the key parameters in encryptfs.conf were edited: either makes the key unwrap fail; " +
	"encryptfs info shows them, and --recovery-key with the recovery (or master) key opens the vault without them)"
