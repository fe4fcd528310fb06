//go:build !encryptfs_testkdf

package cli

import "github.com/encryptfs/encryptfs/internal/session"

// builtinKDFDefaults are kdf's default costs (about 1 s on the reference
// machine; docs/format.md §12).
func builtinKDFDefaults() kdfCosts {
	return kdfCosts{time: session.DefaultKDFTime, memoryKiB: session.DefaultKDFMemoryKiB, threads: session.DefaultKDFThreads}
}
