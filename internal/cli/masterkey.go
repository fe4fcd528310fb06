package cli

import (
	"fmt"
	"io"

	"github.com/encryptfs/encryptfs/internal/keyslot"
	"github.com/encryptfs/encryptfs/internal/session"
	"golang.org/x/term"
)

// formatMasterKey renders a key in the paper form (keyslot.FormatPaperKey:
// hex in groups of eight, four groups per line), which recovery keys share.
func formatMasterKey(key []byte) string { return keyslot.FormatPaperKey(key) }

// parseMasterKey accepts the paper form back: hex digits with any spaces,
// dashes or line breaks between them (keyslot.ParsePaperKey).
func parseMasterKey(s []byte) ([]byte, error) {
	key, err := keyslot.ParsePaperKey(s)
	if err != nil {
		return nil, errorfCode(ExitPassword, "the master key must be %d hex digits (grouping optional)", 2*session.MasterKeySize)
	}
	return key, nil
}

// readMasterKey reads a master key from stdin (without echo on a terminal;
// from stdin otherwise, possibly over two lines as printed by init).
func (a *App) readMasterKey() ([]byte, error) {
	var raw []byte
	if a.stdinIsTerminal() {
		fmt.Fprint(a.Stderr, "Master key: ")
		b, err := term.ReadPassword(int(a.Stdin.Fd()))
		fmt.Fprintln(a.Stderr)
		if err != nil {
			return nil, withCode(ExitPassword, fmt.Errorf("reading the master key: %w", err))
		}
		raw = b
	} else {
		// One line, or the two lines init prints: stop once 64 digits came.
		for hexDigits(raw) < 2*session.MasterKeySize {
			line, err := a.readStdinLine("master key")
			if err != nil {
				clear(raw)
				return nil, withCode(ExitPassword, err)
			}
			raw = append(raw, line...)
			clear(line)
		}
	}
	defer clear(raw)
	return parseMasterKey(raw)
}

func hexDigits(b []byte) int {
	n := 0
	for _, c := range b {
		if ('0' <= c && c <= '9') || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F') {
			n++
		}
	}
	return n
}

// printMasterKey shows the key once, with the warning that goes with it.
func (a *App) printMasterKey(w io.Writer, key []byte) {
	fmt.Fprintf(w, `
Your master key (the only way in if the password is lost):

%s

Write it on paper and keep it somewhere safe, away from this computer.
Anyone who has it can decrypt the vault without the password. It is shown
only now. To use it: encryptfs mount --masterkey / encryptfs passwd --masterkey
(the key is read from stdin).

`, formatMasterKey(key))
}
