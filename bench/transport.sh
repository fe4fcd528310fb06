#!/usr/bin/env bash
# bench/transport.sh: encryptfs on the classic /dev/fuse transport against
# FUSE over io_uring (mount --transport), interleaved over ROUNDS rounds on
# a private tmpfs, medians and the io_uring/classic ratio per row:
#   STAT     µs per stat(2) on a --shared-storage mount (no attribute
#            cache: one LOOKUP per call), caller unpinned
#   STAT@0   the same with the caller pinned to CPU 0
#   OPEN     µs per open(2)+close(2) of one file (OPEN, FLUSH, RELEASE)
#   UNTAR    s to untar a small tree (Go's src/net and src/crypto, ~1600 files)
#   RM       s to rm -rf it
#
# Usage (as root): bench/transport.sh
# Environment: ROUNDS=5, STATS=20000, OPENS=5000, ENCRYPTFS=/path/bin.
# Results are noisy on a shared machine: compare medians of one run only.
set -euo pipefail
export LC_ALL=C

ROUNDS=${ROUNDS:-5}
STATS=${STATS:-20000}
OPENS=${OPENS:-5000}
REPO=$(cd "$(dirname "$0")/.." && pwd)
PARAM=/sys/module/fuse/parameters/enable_uring

die() { echo "transport.sh: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "must run as root (tmpfs, enable_uring)"
[ -e "$PARAM" ] || die "$PARAM missing: the kernel has no FUSE over io_uring"
[ "$(cat "$PARAM")" = Y ] || echo Y >"$PARAM"

WORK=$(mktemp -d /tmp/encryptfs-transport.XXXXXX)
mount -t tmpfs -o size=2g tmpfs "$WORK"
cleanup() {
	for m in "$WORK"/mnt-*; do mountpoint -q "$m" 2>/dev/null && { "$BIN" unmount "$m" || umount -l "$m"; }; done
	umount "$WORK" 2>/dev/null || umount -l "$WORK"
	rmdir "$WORK"
}
trap cleanup EXIT

BIN=${ENCRYPTFS:-$WORK/encryptfs}
[ -n "${ENCRYPTFS:-}" ] || (cd "$REPO" && go build -o "$BIN" ./cmd/encryptfs)
echo "benchmark password" >"$WORK/pw"
"$BIN" init --passfile "$WORK/pw" --kdf-memory 8 --kdf-time 1 "$WORK/cipher" >/dev/null
tar -C /usr/local/go/src -cf "$WORK/tree.tar" net crypto
RESULTS="$WORK/results"
: >"$RESULTS"

# loop_us KIND PATH COUNT [CPU]: µs per call of a Python loop of stat or
# open+close (the interpreter's own cost is a few hundred ns).
loop_us() {
	local pin=()
	[ -n "${4:-}" ] && pin=(taskset -c "$4")
	"${pin[@]}" python3 - "$1" "$2" "$3" <<'EOF'
import os, sys, time
kind, path, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
t = time.perf_counter()
if kind == "stat":
    for _ in range(n):
        os.stat(path)
else:
    for _ in range(n):
        os.close(os.open(path, os.O_RDONLY))
print("%.2f" % ((time.perf_counter() - t) / n * 1e6))
EOF
}

secs() {
	local t0
	t0=$(date +%s.%N)
	"$@"
	echo "$(date +%s.%N) - $t0" | bc
}

for round in $(seq "$ROUNDS"); do
	for tr in classic uring; do
		mnt="$WORK/mnt-$tr"
		mkdir -p "$mnt"
		"$BIN" mount --passfile "$WORK/pw" --transport "$tr" --shared-storage "$WORK/cipher" "$mnt"
		echo x >"$mnt/f"
		echo "$tr STAT $(loop_us stat "$mnt/f" "$STATS")" >>"$RESULTS"
		echo "$tr STAT@0 $(loop_us stat "$mnt/f" "$STATS" 0)" >>"$RESULTS"
		"$BIN" unmount "$mnt"
		"$BIN" mount --passfile "$WORK/pw" --transport "$tr" "$WORK/cipher" "$mnt"
		{
			echo "$tr OPEN $(loop_us open "$mnt/f" "$OPENS")"
			echo "$tr UNTAR $(secs tar -C "$mnt" -xf "$WORK/tree.tar")"
			echo "$tr RM $(secs rm -rf "$mnt/net" "$mnt/crypto")"
		} >>"$RESULTS"
		rm -f "$mnt/f"
		"$BIN" unmount "$mnt"
	done
	echo "round $round done" >&2
done

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
printf "%-8s %10s %10s %8s\n" "" classic io_uring ratio
for row in STAT STAT@0 OPEN UNTAR RM; do
	c=$(awk -v r="$row" '$1=="classic" && $2==r {print $3}' "$RESULTS" | median)
	u=$(awk -v r="$row" '$1=="uring" && $2==r {print $3}' "$RESULTS" | median)
	printf "%-8s %10s %10s %8s\n" "$row" "$c" "$u" "$(echo "scale=2; $u / $c" | bc)"
done
echo "(STAT, STAT@0, OPEN: µs per call; UNTAR, RM: s; medians of $ROUNDS rounds; ratio = io_uring / classic)"
