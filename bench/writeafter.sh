#!/usr/bin/env bash
# bench/writeafter.sh [BINARY] (issue 22: why is a large write slower after
# the small-file rows?). Runs compare.sh's WRITE row (dd 1000 MiB of zeros,
# bs=128k conv=fsync) under three conditions, each on a new mount of a new
# filesystem on a private tmpfs, for encryptfs (default vault), encryptfs
# format 1 and securefs, interleaved, the order rotating each round:
#
#   quiet   the write alone, nothing before it on that tmpfs
#   after   on the same mount right after compare.sh's small-file rows:
#           untar of the kernel subset, md5sum -c of every file, ls -lR,
#           du, (6 s for encryptfs, as compare.sh waits), rm -rf
#   idle    as after, then 10 s of nothing before the dd
#
# For each dd it records MiB/s, the daemon's user and system CPU seconds
# during the dd, the machine's steal and iowait over it (/proc/stat,
# seconds summed over CPUs), and, in "idle", the daemon's CPU seconds
# during the 10 s pause (work left over from the small-file rows). The
# CPU per GiB tells a daemon that works harder (its own state) from one
# that gets less of the machine (steal, other tenants).
#
# As root. ROUNDS=5, TRANSPORT=classic|uring, COLS="v2 v1 securefs";
# v2nc is v2 with dd oflag=nocache: the writer drops the file's pages
# behind it (fadvise DONTNEED), to see what a drop-behind would be worth.
# CONDS="quiet after idle" picks the conditions.
# Writes a table to stdout and the raw rows to $OUT (default
# bench/results/writeafter-<date>.csv).
set -euo pipefail
BIN=${1:-$(command -v encryptfs)}
BIN=$(readlink -f "$BIN")
T=${TRANSPORT:-classic} ROUNDS=${ROUNDS:-5} COLS=${COLS:-"v2 v1 securefs"}
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$HERE/results/writeafter-$(date -u +%Y-%m-%d).csv}
HZ=$(getconf CLK_TCK)
PW=writeafter-password

W=$(mktemp -d /tmp/wa.XXXX)
mount -t tmpfs -o size=12g tmpfs "$W"
PID=""
cleanup() {
	local m
	for m in "$W"/m*; do mountpoint -q "$m" 2>/dev/null && umount "$m"; done
	[ -z "$PID" ] || wait "$PID" 2>/dev/null || true
	umount "$W" && rmdir "$W"
}
trap cleanup EXIT

echo "$PW" >"$W/pw"
SRC=/tmp/wa-src
if [ -z "$(ls "$SRC" 2>/dev/null)" ]; then
	mkdir -p "$SRC"
	tar -xJf /usr/src/linux-source-6.1.tar.xz -C "$SRC"
fi
TREE=$(ls "$SRC")
tar -C "$SRC" -cf "$W/tree.tar" --exclude="$TREE/drivers" --exclude="$TREE/Documentation" "$TREE"
(cd "$SRC" && tar -tf "$W/tree.tar" | grep -v '/$' | while read -r f; do [ -f "$f" ] && ! [ -L "$f" ] && printf '%s\0' "$f"; done |
	xargs -0 md5sum) >"$W/ref.md5"

# mnt COL: a new filesystem of COL at $W/m, its daemon's PID in PID.
mnt() {
	rm -rf "$W/c" && mkdir -p "$W/c" "$W/m"
	case $1 in
	v2 | v2nc) "$BIN" init --passfile "$W/pw" --kdf-memory 8 --kdf-time 1 "$W/c" >/dev/null 2>&1 ;;
	v1) "$BIN" init --format 1 --passfile "$W/pw" --kdf-memory 8 --kdf-time 1 "$W/c" >/dev/null 2>&1 ;;
	securefs) securefs create --pass "$PW" --rounds 1 "$W/c" >/dev/null 2>&1 ;;
	esac
	case $1 in
	securefs) securefs mount --pass "$PW" "$W/c" "$W/m" >/dev/null 2>&1 & ;;
	*) "$BIN" mount -f --transport "$T" --passfile "$W/pw" "$W/c" "$W/m" >/dev/null 2>&1 & ;;
	esac
	PID=$!
	local i
	for i in $(seq 200); do mountpoint -q "$W/m" && return 0; sleep 0.1; done
	echo "writeafter.sh: $1 did not mount" >&2
	exit 1
}
unm() { umount "$W/m"; wait "$PID" || true; PID=""; }

# ticks PID: utime and stime of PID (every thread).
ticks() { awk '{ print $14, $15 }' "/proc/$1/stat"; }
# sysstat: steal and iowait of the whole machine, in ticks.
sysstat() { awk '$1 == "cpu" { print $9, $6 }' /proc/stat; }

echo "round,column,condition,MiBps,user_s,sys_s,steal_s,iowait_s,pause_cpu_s" >"$OUT"

# dd1 ROUND COL COND PAUSECPU: the WRITE row on the current mount.
dd1() {
	local u0 s0 st0 io0 u1 s1 st1 io1 t0 t1
	read -r u0 s0 < <(ticks "$PID")
	read -r st0 io0 < <(sysstat)
	t0=$EPOCHREALTIME
	dd if=/dev/zero of="$W/m/zero" bs=128k count=8000 conv=fsync $DD_EXTRA status=none
	t1=$EPOCHREALTIME
	read -r u1 s1 < <(ticks "$PID")
	read -r st1 io1 < <(sysstat)
	rm -f "$W/m/zero"
	awk -v r="$1" -v c="$2" -v k="$3" -v p="$4" -v t0="$t0" -v t1="$t1" -v hz="$HZ" \
		-v u="$((u1 - u0))" -v s="$((s1 - s0))" -v st="$((st1 - st0))" -v io="$((io1 - io0))" \
		'BEGIN { printf "%s,%s,%s,%.1f,%.2f,%.2f,%.2f,%.2f,%s\n", r, c, k, 1000 / (t1 - t0), u / hz, s / hz, st / hz, io / hz, p }' >>"$OUT"
}

smallrows() {
	tar -xf "$W/tree.tar" -C "$W/m"
	(cd "$W/m" && md5sum -c --quiet "$W/ref.md5" >/dev/null)
	ls -lR "$W/m/$TREE" >/dev/null
	du -s "$W/m/$TREE" >/dev/null
	[ "$1" = securefs ] || sleep 6
	rm -rf "${W:?}/m/$TREE"
}

read -ra cols <<<"$COLS"
for r in $(seq "$ROUNDS"); do
	n=${#cols[@]}
	for i in $(seq 0 $((n - 1))); do
		col=${cols[$(((i + r) % n))]}
		for cond in ${CONDS:-quiet after idle}; do
			sync
			echo 3 >/proc/sys/vm/drop_caches
			mnt "$col"
			pause=""
			if [ "$cond" != quiet ]; then
				smallrows "$col"
			fi
			if [ "$cond" = idle ]; then
				read -r u0 s0 < <(ticks "$PID")
				sleep 10
				read -r u1 s1 < <(ticks "$PID")
				pause=$(awk -v t="$((u1 + s1 - u0 - s0))" -v hz="$HZ" 'BEGIN { printf "%.2f", t / hz }')
			fi
			DD_EXTRA=""
			[ "$col" = v2nc ] && DD_EXTRA=oflag=nocache
			dd1 "$r" "$col" "$cond" "$pause"
			unm
			tail -n 1 "$OUT" >&2
		done
	done
done

# The table: medians per column and condition.
python3 - "$OUT" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
keys = ["MiBps", "user_s", "sys_s", "steal_s", "iowait_s"]
print("| column | condition | MiB/s | daemon user s | daemon sys s | CPU s per GiB | steal s | iowait s | daemon CPU in the pause |")
print("|---|---|---|---|---|---|---|---|---|")
cols = []
for r in rows:
    if r["column"] not in cols:
        cols.append(r["column"])
for c in cols:
    for k in ["quiet", "after", "idle"]:
        sel = [r for r in rows if r["column"] == c and r["condition"] == k]
        if not sel:
            continue
        med = {x: statistics.median(float(r[x]) for r in sel) for x in keys}
        rng = "%.0f..%.0f" % (min(float(r["MiBps"]) for r in sel), max(float(r["MiBps"]) for r in sel))
        per = statistics.median((float(r["user_s"]) + float(r["sys_s"])) / (1000 / 1024) for r in sel)
        pause = [float(r["pause_cpu_s"]) for r in sel if r["pause_cpu_s"]]
        p = "%.2f" % statistics.median(pause) if pause else ""
        print("| %s | %s | %.0f (%s) | %.2f | %.2f | %.2f | %.2f | %.2f | %s |" % (
            c, k, med["MiBps"], rng, med["user_s"], med["sys_s"], per, med["steal_s"], med["iowait_s"], p))
EOF
