package names

import "regexp"

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

// conflictSuffix matches exactly one accepted suffix. conflictTail finds
// one at the end of a plaintext name: every alternative starts with '.' or
// ' ' and has no parentheses inside, so a name ends in at most one.
// Compiled regular expressions are immutable and safe for concurrent use.
var (
	conflictSuffix = regexp.MustCompile(`^` + conflictPatterns + `$`)
	conflictTail   = regexp.MustCompile(conflictPatterns + `$`)
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
func SplitConflict(plain string) (orig, suffix string, ok bool) {
	loc := conflictTail.FindStringIndex(plain)
	if loc == nil || loc[0] == 0 {
		return "", "", false
	}
	orig, suffix = plain[:loc[0]], plain[loc[0]:]
	if !IsConflictSuffix(suffix) {
		return "", "", false
	}
	return orig, suffix, true
}
