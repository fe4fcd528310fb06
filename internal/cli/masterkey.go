package cli

import (
	"encoding/hex"
	"fmt"
	"io"
	"strings"

	"github.com/encryptfs/encryptfs/internal/session"
	"golang.org/x/term"
)

// formatMasterKey renders a key as lowercase hex in groups of eight, four
// groups per line: easy to copy onto paper and to type back.
func formatMasterKey(key []byte) string {
	h := hex.EncodeToString(key)
	var b strings.Builder
	for i := 0; i < len(h); i += 8 {
		switch {
		case i == 0:
		case i%32 == 0:
			b.WriteString("-\n    ")
		default:
			b.WriteByte('-')
		}
		b.WriteString(h[i:min(i+8, len(h))])
	}
	return "    " + b.String()
}

// parseMasterKey accepts the paper form back: hex digits with any spaces,
// dashes or line breaks between them.
func parseMasterKey(s []byte) ([]byte, error) {
	var digits []byte
	for _, c := range s {
		switch {
		case c == ' ' || c == '-' || c == '\t' || c == '\n' || c == '\r':
		default:
			digits = append(digits, c)
		}
	}
	defer clear(digits)
	key := make([]byte, hex.DecodedLen(len(digits)))
	if _, err := hex.Decode(key, digits); err != nil || len(key) != session.MasterKeySize {
		clear(key)
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
