package cli

import "github.com/encryptfs/encryptfs/internal/display"

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
