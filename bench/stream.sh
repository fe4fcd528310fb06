#!/usr/bin/env bash
# bench/stream.sh: A/B of two encryptfs binaries on the streaming rows of
# bench/compare.sh, interleaved over ROUNDS rounds on a private tmpfs,
# with medians, spreads (min..max) and the B/A ratio per row:
#   WRITE  MiB/s of dd if=/dev/zero bs=128k count=8000 conv=fsync (1000 MiB)
#   READ   MiB/s of dd of=/dev/null bs=128k of that file, after a remount
#          (the mount's page cache is gone; the ciphertext stays in tmpfs)
# Each binary has its own vault, and every round writes a new file into
# tmpfs pages freed by the previous round's rm (the first write into fresh
# tmpfs pages is slow: see issue 9).
#
# Usage (as root): bench/stream.sh A-BINARY B-BINARY
# Environment: ROUNDS=5, TRANSPORT=auto|classic|uring (A_TRANSPORT and
# B_TRANSPORT override it per side: one binary, classic against io_uring),
# MIB=1000,
# PROFILE=dir (B's daemon writes cpu-<round>.pprof there:
# ENCRYPTFS_CPUPROFILE). Results are noisy on a shared machine: compare
# the medians of one run only.
set -euo pipefail
export LC_ALL=C

ROUNDS=${ROUNDS:-5}
TRANSPORT=${TRANSPORT:-auto}
MIB=${MIB:-1000}
die() { echo "stream.sh: $*" >&2; exit 1; }
[ $# = 2 ] || die "usage: stream.sh A-BINARY B-BINARY"
[ "$(id -u)" = 0 ] || die "must run as root (tmpfs)"
BINS=("$(realpath "$1")" "$(realpath "$2")")
TRANSPORTS=("${A_TRANSPORT:-$TRANSPORT}" "${B_TRANSPORT:-$TRANSPORT}")

WORK=$(mktemp -d /tmp/encryptfs-stream.XXXXXX)
mount -t tmpfs -o size=$((MIB * 3 + 512))m tmpfs "$WORK"
cleanup() {
	for m in "$WORK"/mnt-*; do mountpoint -q "$m" 2>/dev/null && { umount "$m" || umount -l "$m"; }; done
	umount "$WORK" 2>/dev/null || umount -l "$WORK"
	rmdir "$WORK"
}
trap cleanup EXIT
echo "benchmark password" >"$WORK/pw"
: >"$WORK/results"

# mnt AB ROUND: mount vault AB (0 or 1) in the foreground, as our child,
# and wait until it is up.
mnt() {
	local env=()
	[ "$1" = 1 ] && [ -n "${PROFILE:-}" ] && env=(ENCRYPTFS_CPUPROFILE="$PROFILE/cpu-$2-${3:-0}.pprof")
	env "${env[@]}" "${BINS[$1]}" mount -f --passfile "$WORK/pw" --transport "${TRANSPORTS[$1]}" "$WORK/cipher-$1" "$WORK/mnt-$1" 2>>"$WORK/log-$1" &
	PID=$!
	for _ in $(seq 100); do mountpoint -q "$WORK/mnt-$1" && return; sleep 0.1; done
	die "mount $1 did not come up: $(cat "$WORK/log-$1")"
}
unmnt() { umount "$WORK/mnt-$1"; wait "$PID" || true; }

# mibs SECONDS: MiB/s
mibs() { python3 -c "import sys; print('%.0f' % ($MIB / float(sys.argv[1])))" "$1"; }
# secs CMD...: wall seconds of CMD
secs() {
	local t0 t1
	t0=$(date +%s.%N)
	"$@" 2>/dev/null
	t1=$(date +%s.%N)
	python3 -c "import sys; print(float(sys.argv[2]) - float(sys.argv[1]))" "$t0" "$t1"
}

for ab in 0 1; do
	"${BINS[$ab]}" init --passfile "$WORK/pw" --kdf-memory 8 --kdf-time 1 "$WORK/cipher-$ab" >/dev/null
	mkdir "$WORK/mnt-$ab"
	# Warm tmpfs: take and free the pages that the rounds will reuse.
	mnt "$ab" warm
	dd if=/dev/zero of="$WORK/mnt-$ab/f" bs=1M count="$MIB" conv=fsync status=none
	rm "$WORK/mnt-$ab/f"
	unmnt "$ab"
done

for round in $(seq "$ROUNDS"); do
	order=(0 1)
	[ $((round % 2)) = 0 ] && order=(1 0)
	for ab in "${order[@]}"; do
		mnt "$ab" w "$round"
		t=$(secs dd if=/dev/zero of="$WORK/mnt-$ab/f" bs=128k count=$((MIB * 8)) conv=fsync)
		echo "WRITE $ab $(mibs "$t")" >>"$WORK/results"
		unmnt "$ab"
		mnt "$ab" r "$round"
		t=$(secs dd if="$WORK/mnt-$ab/f" of=/dev/null bs=128k)
		echo "READ $ab $(mibs "$t")" >>"$WORK/results"
		rm "$WORK/mnt-$ab/f"
		unmnt "$ab"
	done
	echo "round $round: $(grep -c . "$WORK/results") figures" >&2
done

python3 - "$WORK/results" "${BINS[0]} (${TRANSPORTS[0]})" "${BINS[1]} (${TRANSPORTS[1]})" <<'EOF'
import sys, statistics
rows = {}
for line in open(sys.argv[1]):
    row, ab, v = line.split()
    rows.setdefault(row, {}).setdefault(int(ab), []).append(float(v))
print("A = %s\nB = %s" % (sys.argv[2], sys.argv[3]))
print("%-6s %18s %18s %6s" % ("row", "A MiB/s (min..max)", "B MiB/s (min..max)", "B/A"))
for row in ("WRITE", "READ"):
    a, b = rows[row][0], rows[row][1]
    ma, mb = statistics.median(a), statistics.median(b)
    print("%-6s %5.0f (%4.0f..%4.0f) %5.0f (%4.0f..%4.0f) %6.2f" % (row, ma, min(a), max(a), mb, min(b), max(b), mb / ma))
EOF
