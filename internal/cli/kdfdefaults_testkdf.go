//go:build encryptfs_testkdf

package cli

import "github.com/encryptfs/encryptfs/internal/session"

// builtinKDFDefaults, in the binary the CLI tests build (go build -tags
// encryptfs_testkdf, see main_test.go), are kdf's floor, so that passwd
// without --kdf-* flags stays fast in tests. Never build a release with
// this tag: it makes init's default and passwd's floor the weakest costs.
func builtinKDFDefaults() kdfCosts {
	return kdfCosts{time: session.MinKDFTime, memoryKiB: session.MinKDFMemoryKiB, threads: session.MinKDFThreads}
}
