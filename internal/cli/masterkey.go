package cli

import (
	"fmt"
	"io"

	"github.com/encryptfs/encryptfs/internal/keyslot"
	"github.com/encryptfs/encryptfs/internal/session"
	"golang.org/x/term"
)

// formatMasterKey renders a key in the paper form (keyslot.FormatPaperKey:
// hex in dash-separated groups of eight, one line), which recovery keys share.
func formatMasterKey(key []byte) string { return keyslot.FormatPaperKey(key) }

// parseMasterKey accepts the paper form back: hex digits with any spaces,
// dashes or line breaks between them (keyslot.ParsePaperKey).
func parseMasterKey(s []byte) ([]byte, error) {
	key, err := keyslot.ParsePaperKey(s)
	if err != nil {
		return nil, paperKeyError("master key")
	}
	return key, nil
}

// Bounds of a paper key typed or pasted back: init prints it on one line,
// older versions on two, and a user may type it in groups, one per line;
// more than paperKeyLines lines or paperKeyBytes bytes is not a key (a
// password typed by mistake, a file piped in), and reading stops there
// rather than consume what follows (the rest of a paste would otherwise
// reach the shell as a command).
const (
	paperKeyLines = 8
	paperKeyBytes = 1024
)

// readMasterKey reads a master key or a recovery key (what names it in the
// prompt and errors: "recovery key", "master key") from stdin: without
// echo on a terminal, line after line until its 64 hex digits have come
// (the key pasted over two lines, or typed in groups), within the bounds
// above; the same from a non-terminal stdin.
func (a *App) readMasterKey(what string) ([]byte, error) {
	next := func() ([]byte, error) { return a.readStdinLine(what) }
	if a.stdinIsTerminal() {
		fd := int(a.Stdin.Fd())
		first := true
		next = func() ([]byte, error) {
			if first {
				fmt.Fprintf(a.Stderr, "%s (%d hex digits): ", upperFirst(what), 2*session.MasterKeySize)
				first = false
			} else {
				fmt.Fprint(a.Stderr, "(continued): ")
			}
			b, err := term.ReadPassword(fd)
			fmt.Fprintln(a.Stderr)
			if err != nil {
				return nil, fmt.Errorf("reading the %s from the terminal: %w", what, err)
			}
			return b, nil
		}
	}
	raw, err := collectPaperKey(what, next)
	if err != nil {
		return nil, withCode(ExitPassword, err)
	}
	defer clear(raw)
	key, err := keyslot.ParsePaperKey(raw)
	if err != nil {
		return nil, paperKeyError(what)
	}
	return key, nil
}

// collectPaperKey reads lines with next until they hold 2*MasterKeySize
// hex digits. A line with anything but hex digits, spaces, tabs and
// dashes, more digits than a key has, more than paperKeyLines lines or
// paperKeyBytes bytes stop it with an error that never quotes the input.
func collectPaperKey(what string, next func() ([]byte, error)) ([]byte, error) {
	var raw []byte
	for lines := 0; hexDigits(raw) < 2*session.MasterKeySize; lines++ {
		if lines == paperKeyLines {
			clear(raw)
			return nil, paperKeyError(what)
		}
		line, err := next()
		if err != nil {
			clear(raw)
			return nil, err
		}
		ok := len(raw)+len(line) <= paperKeyBytes
		for _, c := range line {
			if !isHexDigit(c) && c != ' ' && c != '\t' && c != '-' && c != '\r' {
				ok = false
			}
		}
		raw = append(append(raw, line...), '\n')
		clear(line)
		if !ok || hexDigits(raw) > 2*session.MasterKeySize {
			clear(raw)
			return nil, paperKeyError(what)
		}
	}
	return raw, nil
}

// paperKeyError is the one line for a key that is not 64 hex digits.
func paperKeyError(what string) error {
	return errorfCode(ExitPassword, "the %s must be %d hex digits (groups separated by spaces, dashes or line breaks)", what, 2*session.MasterKeySize)
}

func isHexDigit(c byte) bool {
	return ('0' <= c && c <= '9') || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F')
}

func hexDigits(b []byte) int {
	n := 0
	for _, c := range b {
		if isHexDigit(c) {
			n++
		}
	}
	return n
}

// upperFirst capitalizes an ASCII phrase for a prompt.
func upperFirst(s string) string {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}

// printMasterKey shows the key once, with the warning that goes with it.
func printMasterKey(w io.Writer, key []byte) {
	fmt.Fprintf(w, `
Your master key (the only way in if the password is lost):

%s

Write it on paper and keep it somewhere safe, away from this computer.
Anyone who has it can decrypt the vault without the password. It is shown
only now. To use it: encryptfs mount --recovery-key / encryptfs passwd
--recovery-key (asked for on the terminal, or read from stdin).

`, formatMasterKey(key))
}
