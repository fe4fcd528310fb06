//go:build !encryptfs_testkdf

package cli

import "github.com/encryptfs/encryptfs/internal/crypto/kdf"

// builtinKDFDefaults are kdf's default costs (about 1 s on the reference
// machine; docs/format.md §12).
func builtinKDFDefaults() kdfCosts {
	return kdfCosts{time: kdf.DefaultTime, memoryKiB: kdf.DefaultMemoryKiB, threads: kdf.DefaultThreads}
}
