#!/usr/bin/env bash
# bench/ddab.sh: A/B of two encryptfs binaries on compare.sh's WRITE and
# READ rows: dd of 512 MiB (bs=128k, conv=fsync) into a new default vault
# on a private tmpfs, then a read back after drop_caches, the two
# binaries interleaved over ROUNDS rounds.
# Usage (as root): bench/ddab.sh A-BINARY B-BINARY; ROUNDS=5,
# TRANSPORT=classic|uring, A_INIT / B_INIT="init flags" (e.g.
# A_INIT="--format 1" with one binary for both: format 1 against the
# default format 2), WARM=MiB (write and free that much in /dev/shm
# before the write and before the read, so that neither pays this VM's
# host fault on memory new to the guest: bench/README.md, writeafter.sh).
# Prints a line a mount: "0|1 WRITE-MB/s READ-GB/s" (dd's own units);
# take the medians per binary.
set -euo pipefail
A=$1 B=$2 ROUNDS=${ROUNDS:-5} T=${TRANSPORT:-classic}
W=$(mktemp -d /tmp/ddab.XXXX); mount -t tmpfs -o size=3g tmpfs "$W"
cleanup() {
	for m in "$W"/m*; do mountpoint -q "$m" && umount "$m"; done
	umount "$W"
	rmdir "$W"
}
trap cleanup EXIT
echo pw > "$W/pw"
read -r -a INIT0 <<<"${A_INIT:-}"
read -r -a INIT1 <<<"${B_INIT:-}"
for x in 0 1; do
  bin=$A flags=("${INIT0[@]}"); [ $x = 1 ] && bin=$B flags=("${INIT1[@]}")
  mkdir "$W/c$x" "$W/m$x"; "$bin" init --passfile "$W/pw" "${flags[@]}" "$W/c$x" >/dev/null 2>&1
done
warm() {
  [ -n "${WARM:-}" ] || return 0
  dd if=/dev/zero of=/dev/shm/ddab-warm bs=1M count="$WARM" status=none
  rm -f /dev/shm/ddab-warm
}
for _ in $(seq "$ROUNDS"); do
  for x in 0 1; do
    bin=$A; [ $x = 1 ] && bin=$B
    "$bin" mount -f --passfile "$W/pw" --transport "$T" "$W/c$x" "$W/m$x" 2>/dev/null & pid=$!
    for _ in $(seq 100); do mountpoint -q "$W/m$x" && break; sleep 0.1; done
    rm -f "$W/m$x/f"; sync; warm
    w=$(dd if=/dev/zero of="$W/m$x/f" bs=128k count=4096 conv=fsync 2>&1 | awk '/copied/ {print $(NF-1)}')
    echo 3 > /proc/sys/vm/drop_caches; warm
    rd=$(dd if="$W/m$x/f" of=/dev/null bs=128k 2>&1 | awk '/copied/ {print $(NF-1)}')
    echo "$x $w $rd"
    umount "$W/m$x"; wait $pid || true
  done
done
