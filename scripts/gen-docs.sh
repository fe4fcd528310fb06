#!/usr/bin/env bash
# Regenerates the documents derived from the command definitions
# (internal/cli): the manual page docs/man/encryptfs.1. TestManPageCurrent
# fails when the committed copy differs from what this writes.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"
go run ./cmd/encryptfs man >docs/man/encryptfs.1.tmp
mv docs/man/encryptfs.1.tmp docs/man/encryptfs.1
echo "wrote docs/man/encryptfs.1"
