// Command encryptfs creates, mounts and manages EncryptFS vaults: an
// encrypted overlay file system for Linux. See docs/cli.md.
package main

import (
	"os"

	"github.com/encryptfs/encryptfs/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:]))
}
