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
# The vault's freshness state on this machine (docs/cli.md, --state-dir)
# goes under $work too, so that the demo leaves nothing behind.
export XDG_STATE_HOME=$work/state

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
# Where hello.txt is stored: encrypt-path asks the vault (names are
# encrypted, and the layout may change), rather than guessing by size.
stored=$cipher/$("$bin" encrypt-path --passfile "$pwfile" "$cipher" hello.txt)
[ -f "$stored" ] || { echo "stored hello.txt not found at $stored" >&2; exit 1; }
plain_size=$(stat -c %s "$mnt/hello.txt")
stored_size=$(stat -c %s "$stored")
# Format 2 (docs/format.md §14, §16): a 128-byte header; with file roots
# (feature flag FileRoots) a 4096-byte tag block before each group of 256
# chunks, except that with compact roots (CompactRoots, the default) a
# file of one chunk has none: its only tag is the chunk's own; then each
# chunk as nonce + ciphertext + 16-byte tag, the nonce 16 bytes
# (aes-256-gcm, the default; aes-256-siv) or 24 (xchacha20-poly1305)
# (§5.3).
"$bin" info "$cipher" >"$work/info"
header=128
compact=0
if grep -q '^Feature flags:.*CompactRoots' "$work/info"; then
	tagblock=0 compact=1
elif grep -q '^Feature flags:.*FileRoots' "$work/info"; then
	tagblock=4096
else
	tagblock=0
fi
if grep -q '^Cipher: *xchacha20-poly1305' "$work/info"; then nonce=24; else nonce=16; fi
chunk=$((stored_size - header - tagblock))
echo "the stored hello.txt: ${stored#"$work"/}"
echo "  $stored_size bytes on disk for $plain_size bytes of plaintext:"
echo "  $header-byte header (version 2, flags, epoch, the file ID, size, generation, root, its bindings to its place, a MAC)"
if [ "$tagblock" -gt 0 ]; then
	echo "  + $tagblock-byte tag block (file roots: one 16-byte entry per chunk, that chunk's tag, i.e. its last 16 bytes; the rest zero)"
elif [ "$compact" = 1 ]; then
	echo "  (no tag block: with compact file roots a file of one chunk keeps its only tag in the chunk; the header's root covers it)"
fi
echo "  + one $chunk-byte chunk ($nonce-byte nonce + $((chunk - nonce - 16)) bytes of ciphertext + 16-byte tag)"
if [ "$chunk" -ne $((plain_size + nonce + 16)) ]; then
	echo "unexpected stored size $stored_size for $plain_size bytes of plaintext" >&2
	exit 1
fi
echo "header:"
od -A d -t x1 -N "$header" "$stored"
if [ "$tagblock" -gt 0 ]; then
	echo "tag block (first entry, then all zero):"
	od -A d -t x1 -j "$header" -N "$tagblock" "$stored"
fi
echo "chunk:"
od -A d -t x1 -j $((header + tagblock)) "$stored"
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
