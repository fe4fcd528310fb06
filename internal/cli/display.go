package cli

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// displayName is how the CLI shows a plaintext name (or path) to a human.
// Names come from the vault, whose storage may be controlled by someone
// else: a name with control characters (newlines, terminal escapes),
// invalid UTF-8 or invisible format characters (the bidi overrides and
// isolates U+202A-U+202E, U+2066-U+2069, marks U+200E/U+200F, zero-width
// characters) could forge lines or make one name look like another. Such a
// name is printed Go-quoted ("a\u202eb"); any other name, including
// ordinary non-ASCII UTF-8, is printed as it is. JSON output does not use
// this: it has its own escaping.
func displayName(s string) string {
	if needsEscape(s) {
		return strconv.Quote(s)
	}
	return s
}

// displayText escapes the unsafe characters inside a longer message (an
// error that embeds a path), rune by rune, leaving the rest alone.
func displayText(s string) string {
	if !needsEscape(s) {
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

// needsEscape reports whether s has a character displayName escapes.
func needsEscape(s string) bool {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if unsafeRune(r, size) {
			return true
		}
		i += size
	}
	return false
}

// unsafeRune: invalid UTF-8, control characters (C0, DEL, C1), format
// characters (category Cf: bidi controls, zero-width characters) and the
// line and paragraph separators.
func unsafeRune(r rune, size int) bool {
	return r == utf8.RuneError && size <= 1 || unicode.IsControl(r) ||
		unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029'
}
