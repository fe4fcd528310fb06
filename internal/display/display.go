// Package display decides how a string that comes from a vault (a name,
// a path, a config's Creator) is shown on a terminal. The vault's storage
// may be written by someone else: a string with control characters
// (newlines, terminal escapes), invalid UTF-8 or invisible format
// characters (the bidi overrides and isolates U+202A-U+202E,
// U+2066-U+2069, marks U+200E/U+200F, zero-width characters) could forge
// lines or make one name look like another. The CLI, fsck's report and
// the vault package all use the one rule here. It imports only the
// standard library.
package display

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// unsafeRune reports whether rune r, decoded from size bytes, must not
// reach a terminal as it is: invalid UTF-8, control characters (C0, DEL,
// C1), format characters (category Cf: bidi controls, zero-width
// characters) and the line and paragraph separators. Ordinary non-ASCII
// text is safe.
func unsafeRune(r rune, size int) bool {
	return r == utf8.RuneError && size <= 1 || unicode.IsControl(r) ||
		unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029'
}

// Safe reports whether s can be shown as it is (no unsafe rune).
func Safe(s string) bool {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if unsafeRune(r, size) {
			return false
		}
		i += size
	}
	return true
}

// Name returns s as it is if it is Safe, else Go-quoted ("a\u202eb"),
// for a name or path shown on its own.
func Name(s string) string {
	if Safe(s) {
		return s
	}
	return strconv.Quote(s)
}

// Text escapes the unsafe runes inside a longer message (an error that
// embeds a path), rune by rune as Go quoting would, leaving the rest
// alone.
func Text(s string) string {
	if Safe(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if unsafeRune(r, size) {
			q := strconv.Quote(s[i : i+size])
			b.WriteString(q[1 : len(q)-1])
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// Count is "1 thing" or "n things", for counts in summaries that read as
// sentences rather than "1 problem(s)". noun is singular; a noun ending in
// a consonant and "y" takes "ies" (directory, directories).
func Count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if len(noun) > 1 && strings.HasSuffix(noun, "y") && !strings.ContainsAny(noun[len(noun)-2:len(noun)-1], "aeiou") {
		return fmt.Sprintf("%d %sies", n, noun[:len(noun)-1])
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
