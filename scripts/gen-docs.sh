#!/usr/bin/env bash
# Regenerates the documents derived from the command definitions
# (internal/cli): the manual pages docs/man/encryptfs.1 and
# docs/man/encryptfs-COMMAND.1, written by cobra's generator with a fixed
# date. TestManPagesCurrent fails when the committed copies differ.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"
go run ./cmd/encryptfs man --dir docs/man
echo "wrote docs/man/encryptfs*.1"
