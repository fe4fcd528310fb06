#!/usr/bin/env bash
# bench/smallfiles.sh: A/B of two encryptfs binaries (or of one binary
# under two environments) on the small-file rows of bench/compare.sh,
# interleaved over ROUNDS rounds on a private tmpfs, with medians, spreads
# (min..max) and the B/A ratio per row:
#   UNTAR  s of tar -x of TREE into the mount
#   MD5    s of md5sum of every file, by name as compare.sh's md5sum -c
#          (after a remount: nothing cached)
#   LS     s of ls -lR
#   RSYNC  s of rsync -an of the tree's copy on tmpfs to the mount
#   DU     s of du -s
#   RM     s of rm -rf of the tree
# (the rows in compare.sh's order, on one mount after the untar's).
# and CPU  s of the daemon's CPU time (user+system) over the five rows.
#
# Usage (as root): bench/smallfiles.sh A-BINARY B-BINARY
# Environment: ROUNDS=5, TRANSPORT=auto|classic|uring, TREE=a .tar
# (default: Go's src/net, src/crypto and src/runtime, about 3000 files),
# A_ENV / B_ENV="VAR=value ..." (e.g. B_ENV=GOGC=400, with the same
# binary for A and B), A_INIT / B_INIT="init flags ..." (e.g. A_INIT="--format
# 1": format 1 against the default format 2 with one binary). Results are noisy on a shared
# machine: compare the medians of one run only.
set -euo pipefail
export LC_ALL=C

ROUNDS=${ROUNDS:-5}
TRANSPORT=${TRANSPORT:-auto}
die() { echo "smallfiles.sh: $*" >&2; exit 1; }
[ $# = 2 ] || die "usage: smallfiles.sh A-BINARY B-BINARY"
[ "$(id -u)" = 0 ] || die "must run as root (tmpfs)"
BINS=("$(realpath "$1")" "$(realpath "$2")")
# shellcheck disable=SC2034 # used through the nameref in mnt
read -r -a ENVS0 <<<"${A_ENV:-}"
# shellcheck disable=SC2034
read -r -a ENVS1 <<<"${B_ENV:-}"

WORK=$(mktemp -d /tmp/encryptfs-smallfiles.XXXXXX)
mount -t tmpfs -o size=4g tmpfs "$WORK"
cleanup() {
	for m in "$WORK"/mnt-*; do mountpoint -q "$m" 2>/dev/null && { umount "$m" || umount -l "$m"; }; done
	umount "$WORK" 2>/dev/null || umount -l "$WORK"
	rmdir "$WORK"
}
trap cleanup EXIT
echo "benchmark password" >"$WORK/pw"
: >"$WORK/results"
if [ -n "${TREE:-}" ]; then
	cp "$TREE" "$WORK/tree.tar"
else
	tar -C "$(go env GOROOT)/src" -cf "$WORK/tree.tar" net crypto runtime
fi
TOP=$(tar -tf "$WORK/tree.tar" | sed 's|/.*||' | sort -u | tr '\n' ' ')
mkdir "$WORK/ref"
tar -C "$WORK/ref" -xf "$WORK/tree.tar"
(cd "$WORK/ref" && find . -type f -print0 >"$WORK/files")

# mnt AB: mount vault AB (0 or 1) in the foreground, as our child, and
# wait until it is up.
mnt() {
	local -n envs="ENVS$1"
	env "${envs[@]}" "${BINS[$1]}" mount -f --passfile "$WORK/pw" --transport "$TRANSPORT" "$WORK/cipher-$1" "$WORK/mnt-$1" 2>>"$WORK/log-$1" &
	PID=$!
	for _ in $(seq 100); do mountpoint -q "$WORK/mnt-$1" && return; sleep 0.1; done
	die "mount $1 did not come up: $(cat "$WORK/log-$1")"
}
unmnt() { umount "$WORK/mnt-$1"; wait "$PID" || true; }
# cpu: the daemon's CPU seconds so far
cpu() { awk -v hz="$(getconf CLK_TCK)" '{print ($14 + $15) / hz}' "/proc/$PID/stat"; }
secs() {
	local t0 t1
	t0=$(date +%s.%N)
	"$@" >/dev/null
	t1=$(date +%s.%N)
	python3 -c "import sys; print('%.3f' % (float(sys.argv[2]) - float(sys.argv[1])))" "$t0" "$t1"
}

INITS=("${A_INIT:-}" "${B_INIT:-}")
for ab in 0 1; do
	# shellcheck disable=SC2086 # INITS holds flags, split on purpose
	"${BINS[$ab]}" init ${INITS[$ab]} --passfile "$WORK/pw" --kdf-memory 8 --kdf-time 1 "$WORK/cipher-$ab" >/dev/null
	mkdir "$WORK/mnt-$ab"
done

for round in $(seq "$ROUNDS"); do
	order=(0 1)
	[ $((round % 2)) = 0 ] && order=(1 0)
	for ab in "${order[@]}"; do
		m="$WORK/mnt-$ab"
		mnt "$ab"
		c0=$(cpu)
		echo "UNTAR $ab $(secs tar -C "$m" -xf "$WORK/tree.tar")" >>"$WORK/results"
		c1=$(cpu)
		unmnt "$ab"
		mnt "$ab"
		c2=$(cpu)
		{
			echo "MD5 $ab $(secs sh -c "cd '$m' && xargs -0 md5sum <'$WORK/files'")"
			echo "LS $ab $(secs ls -lR "$m")"
			echo "RSYNC $ab $(secs rsync -an --itemize-changes "$WORK/ref/" "$m/")"
			echo "DU $ab $(secs du -s "$m")"
			echo "RM $ab $(secs sh -c "cd '$m' && rm -rf $TOP")"
		} >>"$WORK/results"
		c3=$(cpu)
		echo "CPU $ab $(python3 -c "import sys; a = [float(x) for x in sys.argv[1:]]; print('%.2f' % (a[1] - a[0] + a[3] - a[2]))" "$c0" "$c1" "$c2" "$c3")" >>"$WORK/results"
		unmnt "$ab"
	done
	echo "round $round done" >&2
done

python3 - "$WORK/results" "$ROUNDS" <<'EOF2'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    row, ab, v = line.split()
    rows.setdefault(row, ([], []))[int(ab)].append(float(v))
print("%-6s %24s %24s %6s" % ("row", "A median (min..max)", "B median (min..max)", "B/A"))
for row in ["UNTAR", "MD5", "LS", "RSYNC", "DU", "RM", "CPU"]:
    a, b = rows[row]
    cell = lambda v: "%.3f (%.3f..%.3f)" % (statistics.median(v), min(v), max(v))
    print("%-6s %24s %24s %6.2f" % (row, cell(a), cell(b), statistics.median(b) / statistics.median(a)))
print("(seconds; medians of %s interleaved rounds; CPU is the daemon's)" % sys.argv[2])
EOF2
