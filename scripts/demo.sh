#!/usr/bin/env bash
# End-to-end demo: builds encryptfs, creates a vault in a temporary
# directory, mounts it, writes and reads through the mount, shows what lands
# on disk (the ciphertext side), unmounts, shows that contents moved on disk
# are refused (location binding, format 2), remounts and checks the data.
# Everything is removed at the end, and the mount is undone even on failure.
# On a fresh Debian 12 machine it first installs what is missing
# (scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/setup.sh

work=$(mktemp -d /tmp/encryptfs-demo.XXXXXX)
bin=$work/encryptfs
cipher=$work/cipher
mnt=$work/mnt
pwfile=$work/password

mounted() { awk -v m="$mnt" '$2 == m {found=1} END {exit !found}' /proc/mounts; }
cleanup() {
	if mounted; then "$bin" unmount "$mnt" 2>/dev/null || fusermount3 -uz "$mnt" || true; fi
	rm -rf "$work"
}
trap cleanup EXIT

step() { printf '\n== %s\n' "$*"; }

step "build"
go build -ldflags "-X github.com/encryptfs/encryptfs/internal/cli.commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)" -o "$bin" ./cmd/encryptfs
"$bin" version

step "init: a new vault in $cipher"
printf 'correct horse battery staple\n' >"$pwfile"
"$bin" init --passfile "$pwfile" "$cipher"

step "mount on $mnt (daemonizes; returns once mounted)"
mkdir "$mnt"
"$bin" mount --passfile "$pwfile" "$cipher" "$mnt"
grep " $mnt " /proc/mounts

step "use it like any directory"
echo "Hello from EncryptFS" >"$mnt/hello.txt"
mkdir -p "$mnt/photos/2026"
head -c 3000000 /dev/urandom >"$mnt/photos/2026/big.bin"
ln -s photos/2026/big.bin "$mnt/latest"
cat "$mnt/hello.txt"
ls -lR "$mnt"
(cd "$mnt" && sha256sum hello.txt photos/2026/big.bin) >"$work/sums"

step "the ciphertext side: names, contents and sizes on disk"
find "$cipher" -printf '%M %10s  %P\n' | sort -k3
echo "first bytes of the stored hello.txt (a 128-byte format-2 header: version 2, the file ID, its bindings to its place, a MAC; then the chunks):"
stored=$(find "$cipher" -maxdepth 1 -type f ! -name 'encryptfs.*' -size -200c | head -n 1)
od -A x -t x1z "$stored" | head -n 4
if grep -rq "Hello from EncryptFS" "$cipher"; then
	echo "plaintext found in CIPHERDIR!" >&2
	exit 1
fi
echo "(no plaintext on disk)"

step "info (no secrets)"
"$bin" info "$cipher"

step "unmount"
"$bin" unmount "$mnt"
mounted && { echo "still mounted" >&2; exit 1; }
ls -A "$mnt" | wc -l | xargs echo "entries visible in $mnt now:"

step "location binding: contents moved on disk are refused, not shown"
# init makes format-2 vaults, in which every file and directory is bound to
# its place in the tree (docs/format.md §14). Someone with write access to
# CIPHERDIR but not the key copies the stored hello.txt over the stored
# big.bin (here in a copy of the vault): big.bin does not read as hello.txt.
copy=$work/copy
cp -a "$cipher" "$copy"
big=$(find "$copy" -type f -size +1M)
cp "$copy/${stored#"$cipher"/}" "$big"
if "$bin" cat --passfile "$pwfile" "$copy" photos/2026/big.bin >/dev/null 2>"$work/err"; then
	echo "contents moved to another name were accepted!" >&2
	exit 1
fi
cat "$work/err"
rm -rf "$copy"

step "remount and verify"
"$bin" mount --passfile "$pwfile" "$cipher" "$mnt"
(cd "$mnt" && sha256sum -c "$work/sums")
readlink "$mnt/latest"
"$bin" unmount "$mnt"

step "demo finished: all good"
