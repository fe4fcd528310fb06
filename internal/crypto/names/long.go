package names

import (
	"crypto/sha256"
	"fmt"
	"strings"
)

// hashLen is the length of base64url-nopad(SHA-256(...)).
const hashLen = (sha256.Size*8 + 5) / 6

// longHash returns base64url-nopad(SHA-256(encName)).
func longHash(encName string) string {
	sum := sha256.Sum256([]byte(encName))
	return encoding.EncodeToString(sum[:])
}

// Backing maps an encoded name to the name stored in the backing directory:
// itself when short enough, else LongNamePrefix + base64url(SHA-256(encName)).
//
// Why a hash is safe here: the hash only has to be collision resistant for
// names inside one directory; the sidecar holds the authenticated encName.
func Backing(encName string) (backing string, long bool) {
	if len(encName) <= MaxBackingLen {
		return encName, false
	}
	return LongNamePrefix + longHash(encName), true
}

// IsLongName reports whether a backing name is a long-name entry (not a sidecar).
func IsLongName(backing string) bool {
	h, ok := strings.CutPrefix(backing, LongNamePrefix)
	if !ok || len(h) != hashLen {
		return false
	}
	raw, err := encoding.DecodeString(h)
	return err == nil && len(raw) == sha256.Size
}

// IsSidecar reports whether a backing name is a long-name sidecar.
func IsSidecar(backing string) bool {
	long, ok := strings.CutSuffix(backing, LongNameSuffix)
	return ok && IsLongName(long)
}

// SidecarName returns the sidecar file name for a long-name entry.
func SidecarName(longBacking string) string {
	return longBacking + LongNameSuffix
}

// CheckSidecar verifies that a sidecar's content hashes to the long name,
// returning the encoded name, or ErrBadName. The content must be an encoded
// name that really needed the long form (longer than MaxBackingLen), so each
// name keeps a single backing representation.
func CheckSidecar(longBacking string, content []byte) (string, error) {
	if !IsLongName(longBacking) {
		return "", fmt.Errorf("%w: %q is not a long-name entry", ErrBadName, longBacking)
	}
	if len(content) <= MaxBackingLen || len(content) > MaxLongNameLen {
		return "", fmt.Errorf("%w: sidecar of %d bytes", ErrBadName, len(content))
	}
	encName := string(content)
	if longHash(encName) != longBacking[len(LongNamePrefix):] {
		return "", fmt.Errorf("%w: sidecar does not match its long name", ErrBadName)
	}
	return encName, nil
}

// SplitForeign splits a backing name that is an encoded name followed by a
// sync tool's conflict suffix, such as "<encName> (1)" or
// "<encName>.sync-conflict-20261122-101010-ABCDEFG". The split is at the
// first byte outside the base64url alphabet, and the rest must be exactly
// one accepted conflict suffix (IsConflictSuffix). ok is false when there
// is no such suffix, no encoded prefix, or the name is reserved. The
// caller must still Decrypt encName and show the entry only if it
// authenticates.
func SplitForeign(backing string) (encName, suffix string, ok bool) {
	if IsReserved(backing) {
		return "", "", false
	}
	i := strings.IndexFunc(backing, func(r rune) bool { return !isAlphabet(r) })
	if i <= 0 || !IsConflictSuffix(backing[i:]) {
		return "", "", false
	}
	return backing[:i], backing[i:], true
}

// SplitLongForeign splits a copy of long-name entry long that a sync tool
// renamed. Two forms exist: the suffix appended, "encryptfs.long.<H> (1)",
// and the suffix put before what looks like the file's extension,
// "encryptfs.long.sync-conflict-….<H>" (Syncthing) or
// "encryptfs.long (1).<H>" (Dropbox). The suffix must be an accepted
// conflict suffix (IsConflictSuffix). A copy of a sidecar (ending in
// LongNameSuffix) is not split: it holds a name, not an entry. The caller
// must still read long's sidecar and decrypt the name.
func SplitLongForeign(backing string) (long, suffix string, ok bool) {
	base := LongNamePrefix[:len(LongNamePrefix)-1] // "encryptfs.long"
	if strings.HasSuffix(backing, LongNameSuffix) || !strings.HasPrefix(backing, base) {
		return "", "", false
	}
	if n := len(LongNamePrefix) + hashLen; len(backing) > n && IsLongName(backing[:n]) && IsConflictSuffix(backing[n:]) {
		return backing[:n], backing[n:], true
	}
	if i := len(backing) - hashLen - 1; i > len(base) && backing[i] == '.' && IsConflictSuffix(backing[len(base):i]) {
		long = LongNamePrefix + backing[i+1:]
		if IsLongName(long) {
			return long, backing[len(base):i], true
		}
	}
	return "", "", false
}

// isAlphabet reports whether r is in the base64url alphabet.
func isAlphabet(r rune) bool {
	return r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_'
}
