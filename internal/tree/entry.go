package tree

import "github.com/encryptfs/encryptfs/internal/crypto/names"

// IsEntryName reports whether backing name b of a directory stands for
// an entry of the plaintext tree (one that decrypts, or is shown as a
// bad or conflicting name): every name outside EncryptFS's reserved
// encryptfs.* namespace, and in it the long-name entries and a sync
// tool's copies of them ("encryptfs.long.<H> (1)", IsLongCopy). Not
// entries: the directory ID file and its conflict copies, sidecars,
// temporaries, the config, freshness's files, links files. The one rule
// for listing, resolving, checking (fsck) and recording (freshness)
// alike.
func IsEntryName(b string) bool {
	return !names.IsReserved(b) || names.IsLongName(b) || IsLongCopy(b)
}
