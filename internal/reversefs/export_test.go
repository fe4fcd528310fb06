package reversefs

import (
	"hash/fnv"

	"github.com/encryptfs/encryptfs/internal/crypto/names"
)

// Hooks for the tests that mount (package reversefs_test, which mounts
// through internal/mount and so cannot be inside the package).

// TestChunk, Fill and NewTestRoot are the internal tests' testChunk, fill
// and newRoot.
const TestChunk = testChunk

var (
	Fill        = fill
	NewTestRoot = newRoot
)

// VirtualIno is the bit set in every virtual file's inode number.
const VirtualIno = virtualIno

// ViewName returns the view name of rel's base name in its directory.
func (r *Root) ViewName(rel string) (string, error) {
	return r.v.ViewName(rel)
}

// UnkeyedVirtualIno is the inode number the root's virtual file name
// (encryptfs.conf or encryptfs.dirid) had before the keyed derivation:
// 2^63 | FNV-64a(kind ‖ path), which anyone could compute from a guessed
// plaintext path (security review, issue 7 item 8).
func UnkeyedVirtualIno(name string) uint64 {
	k := map[string]kind{names.ConfigFile: kindConfig, names.DirIDFile: kindDirID}[name]
	h := fnv.New64a()
	h.Write([]byte{byte(k)})
	h.Write([]byte("")) // the root's path
	return virtualIno | h.Sum64()&(virtualIno-1)
}
