package cli

import (
	"fmt"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/encryptfs/encryptfs/internal/display"
)

// displayName is how the CLI shows a plaintext name (or path) to a human:
// as it is, or Go-quoted when it has a character that could forge lines
// or disguise it (internal/display, the rule fsck's report and the vault
// package share). JSON output does not use this: it has its own escaping.
func displayName(s string) string { return display.Name(s) }

// displayText escapes the unsafe characters inside a longer message (an
// error that embeds a path), rune by rune, leaving the rest alone.
func displayText(s string) string { return display.Text(s) }

// plural is "1 thing" or "n things" (display.Count): counts in summaries
// read as sentences, not "1 problem(s)".
func plural(n int, thing string) string { return display.Count(n, thing) }

// escapeJSONForTerminal replaces every non-printable rune in JSON text by
// its \uXXXX escape. encoding/json already escapes control characters but
// not, for example, U+202E; such runes can only be inside strings, where
// the escape means the same character, so the JSON stays equivalent.
func escapeJSONForTerminal(b []byte) []byte {
	var out []byte
	for _, r := range string(b) {
		switch {
		case r == '\n' || r == ' ' || unicode.IsGraphic(r):
			out = utf8.AppendRune(out, r)
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			out = fmt.Appendf(out, "\\u%04x\\u%04x", r1, r2)
		default:
			out = fmt.Appendf(out, "\\u%04x", r)
		}
	}
	return out
}
