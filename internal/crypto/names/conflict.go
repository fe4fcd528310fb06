package names

import (
	"regexp"
	"strings"
)

// Sync-conflict suffixes (docs/format.md §6.4). A backing name that is an
// encrypted name followed by one of these suffixes is a copy made by a sync
// tool, and is shown read-only as "<plain name><suffix>". Every other
// foreign suffix is refused: the storage chooses the suffix, so accepting
// any text would let it choose names (with control, bidi or terminal
// escape characters) and present one file's contents under another
// directory's file name. Each pattern is printable ASCII only, fixed in
// shape, and bounded in length (MaxConflictSuffixLen).
//
//   - Syncthing: ".sync-conflict-YYYYMMDD-HHMMSS-DEVICE" (DEVICE is the
//     first 7 characters of the device ID, [A-Z0-9]).
//   - Dropbox: " (DEVICE's conflicted copy YYYY-MM-DD)" (DEVICE is the
//     computer or user name: 1 to 64 printable ASCII characters other than
//     parentheses).
//   - Nextcloud, ownCloud: " (conflicted copy YYYY-MM-DD)" or
//     " (conflicted copy YYYY-MM-DD HHMMSS)".
//   - Dropbox, Google Drive, Windows: the duplicate number " (N)", N from 1
//     to 9999 without leading zeros.
const conflictPatterns = `(?:` +
	`\.sync-conflict-[0-9]{8}-[0-9]{6}-[A-Z0-9]{7}` +
	`|` + ` \([ -'*-~]{1,64}'s conflicted copy [0-9]{4}-[0-9]{2}-[0-9]{2}\)` +
	`|` + ` \(conflicted copy [0-9]{4}-[0-9]{2}-[0-9]{2}(?: [0-9]{6})?\)` +
	`|` + ` \([1-9][0-9]{0,3}\)` +
	`)`

// conflictSuffix matches exactly one accepted suffix. Every alternative
// starts with '.' or ' ' and has no parentheses inside, so a name ends in
// at most one (SplitConflict). A compiled regular expression is immutable
// and safe for concurrent use.
var (
	conflictSuffix = regexp.MustCompile(`^` + conflictPatterns + `$`)
)

// MaxConflictSuffixLen bounds the length of an accepted conflict suffix
// (the Dropbox form with a 64-character device name).
const MaxConflictSuffixLen = len(" (") + 64 + len("'s conflicted copy 2006-01-02)")

// IsConflictSuffix reports whether s is exactly one of the sync-tool
// conflict suffixes EncryptFS accepts (see conflictSuffix).
func IsConflictSuffix(s string) bool {
	return len(s) <= MaxConflictSuffixLen && conflictSuffix.MatchString(s)
}

// SplitConflict splits a plaintext name shown for a conflict copy into the
// original name and the conflict suffix. ok is false if plain does not end
// in an accepted suffix or nothing is left before it.
//
// Every lookup of a name that does not exist asks this (tar -x: one per
// file), so the suffix is found by its shape, not by running the pattern
// along the whole name: a suffix that ends in ')' starts at the last " ("
// (no accepted suffix has a parenthesis inside), and the Syncthing one
// has a fixed length. The anchored pattern then decides, as before.
func SplitConflict(plain string) (orig, suffix string, ok bool) {
	at := -1
	if strings.HasSuffix(plain, ")") {
		at = strings.LastIndex(plain, " (")
	} else if i := len(plain) - syncthingSuffixLen; i >= 0 && strings.HasPrefix(plain[i:], syncthingPrefix) {
		at = i
	}
	if at <= 0 {
		return "", "", false
	}
	orig, suffix = plain[:at], plain[at:]
	if !IsConflictSuffix(suffix) {
		return "", "", false
	}
	return orig, suffix, true
}

// The Syncthing suffix: ".sync-conflict-YYYYMMDD-HHMMSS-DEVICE".
const (
	syncthingPrefix    = ".sync-conflict-"
	syncthingSuffixLen = len(syncthingPrefix + "20060102-150405-ABCDEFG")
)
