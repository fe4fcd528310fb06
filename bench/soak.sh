#!/usr/bin/env bash
# bench/soak.sh: load and soak test of one encryptfs mount (issue 10, item 5).
#
# Runs, for DURATION, 32 worker processes at once against one mount:
#   untar    extract a source tarball into a fresh directory, md5sum -c it,
#            remove the previous round
#   md5      md5sum -c a tree extracted once
#   rename   move its own files between four shared directories, checking
#            their bytes after every move
#   append   append a numbered line with fsync to its own log, re-reading the
#            whole log every 25 lines
#   shared   write its own 4 KiB slots of one shared file and read random
#            slots of everyone's, checking each is a whole slot or zeros
#   xattr    set, read back and remove user xattrs on its own files
# Every 10 s it samples the daemon's RSS (VmRSS), open fds (/proc/PID/fd),
# goroutines and live Go heap (the daemon writes those two to
# $ENCRYPTFS_STATS_FILE when that is set). At the end it checks every byte every worker left, unmounts,
# mounts again and checks them all once more. It fails if a check fails, a
# worker hangs, the daemon dies, or a figure keeps growing (see
# keeps_growing below).
#
# Usage (as root, or a user who may mount FUSE): bench/soak.sh [DURATION]
#   DURATION: seconds, or with a unit: 60, 90s, 30m, 2h (default 60)
# Environment:
#   WORKERS=32            worker processes (spread over the six kinds)
#   SAMPLE=10             seconds between samples
#   ENCRYPTFS=/path/bin   encryptfs binary; default: go build ./cmd/encryptfs
#   TMPDIR                where the vault, mount and state live
#   SOAK_SAMPLES=file     also copy the samples table there
set -euo pipefail
export LC_ALL=C

die() { echo "soak.sh: $*" >&2; exit 1; }
note() { echo "== $*" >&2; }

DURATION=${1:-60}
case $DURATION in
*h) DURATION=$((${DURATION%h} * 3600)) ;;
*m) DURATION=$((${DURATION%m} * 60)) ;;
*s) DURATION=${DURATION%s} ;;
esac
case $DURATION in '' | *[!0-9]* | 0) die "DURATION must be a positive number of seconds (or 30m, 2h)" ;; esac
WORKERS=${WORKERS:-32}
SAMPLE=${SAMPLE:-10}
REPO=$(cd "$(dirname "$0")/.." && pwd)

WORK=$(mktemp -d "${TMPDIR:-/tmp}/encryptfs-soak.XXXXXX")
CIPHER=$WORK/cipher MNT=$WORK/mnt STATE=$WORK/state
mkdir -p "$CIPHER" "$MNT" "$STATE"
DAEMON_PID="" WORKER_PIDS=()

cleanup() {
	local p
	for p in "${WORKER_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	if mountpoint -q "$MNT" 2>/dev/null; then
		"$BIN" unmount "$MNT" >/dev/null 2>&1 || fusermount3 -u "$MNT" >/dev/null 2>&1 || true
	fi
	if [ -n "$DAEMON_PID" ]; then
		for _ in $(seq 50); do kill -0 "$DAEMON_PID" 2>/dev/null || break; sleep 0.2; done
		kill "$DAEMON_PID" 2>/dev/null || true
	fi
	# Never rm -rf through a live mount.
	mountpoint -q "$MNT" 2>/dev/null || rm -rf "$WORK"
}
BIN=${ENCRYPTFS:-}
trap cleanup EXIT
if [ -z "$BIN" ]; then
	BIN=$WORK/encryptfs
	(cd "$REPO" && go build -o "$BIN" ./cmd/encryptfs) || die "go build failed"
fi

# ---- the vault and the daemon ----

echo "soak password" >"$WORK/passfile"
"$BIN" init --passfile "$WORK/passfile" --kdf-memory 8 --kdf-time 1 --chunk-size 4k "$CIPHER" >/dev/null
mount_vault() {
	ENCRYPTFS_STATS_FILE=$WORK/stats "$BIN" mount -f --passfile "$WORK/passfile" "$CIPHER" "$MNT" 2>>"$WORK/daemon.log" &
	DAEMON_PID=$!
	for _ in $(seq 100); do
		mountpoint -q "$MNT" && return 0
		kill -0 "$DAEMON_PID" 2>/dev/null || die "the daemon exited at mount: $(cat "$WORK/daemon.log")"
		sleep 0.1
	done
	die "not mounted after 10 s"
}
unmount_vault() {
	"$BIN" unmount "$MNT" || die "unmount failed"
	for _ in $(seq 100); do kill -0 "$DAEMON_PID" 2>/dev/null || break; sleep 0.1; done
	if kill -0 "$DAEMON_PID" 2>/dev/null; then die "the daemon did not exit after unmount"; fi
	wait "$DAEMON_PID" || die "the daemon exited with $?: $(tail -5 "$WORK/daemon.log")"
	DAEMON_PID=""
}
mount_vault

# ---- test data ----

note "preparing test data"
tar -C "$REPO" -cf "$WORK/src.tar" internal docs
mkdir "$WORK/plain"
tar -C "$WORK/plain" -xf "$WORK/src.tar"
(cd "$WORK/plain" && find . -type f -print0 | sort -z | xargs -0 md5sum) >"$WORK/manifest"
mkdir -p "$MNT/ro" "$MNT/untar" "$MNT/ren/d0" "$MNT/ren/d1" "$MNT/ren/d2" "$MNT/ren/d3" "$MNT/logs" "$MNT/xattr"
tar -C "$MNT/ro" -xf "$WORK/src.tar"
SLOTS=512
truncate -s $((SLOTS * 4096)) "$MNT/shared.bin"

KINDS=(untar md5 rename append shared xattr)
# count_of KIND: how many workers of KIND (worker i has kind i % 6).
count_of() {
	local k=$1 i n=0
	for ((i = 0; i < WORKERS; i++)); do [ "${KINDS[i % 6]}" = "$k" ] && n=$((n + 1)); done
	echo $n
}
NSHARED=$(count_of shared)

fail() { echo "$*" >>"$WORK/fail"; echo "soak.sh: FAIL: $*" >&2; }

# ---- workers: run_KIND i and check_KIND i (the final check) ----

run_untar() {
	local i=$1 n=0 d=$MNT/untar/w$1
	mkdir -p "$d"
	while [ $SECONDS -lt "$END" ]; do
		n=$((n + 1))
		mkdir "$d/$n"
		tar -C "$d/$n" -xf "$WORK/src.tar" || { fail "untar w$i round $n: tar failed"; return 1; }
		(cd "$d/$n" && md5sum --quiet -c "$WORK/manifest") || { fail "untar w$i round $n: md5 mismatch"; return 1; }
		[ $n -gt 1 ] && rm -rf "${d:?}/$((n - 1))"
		echo $n >"$STATE/untar.$i"
	done
}
check_untar() {
	local n
	n=$(cat "$STATE/untar.$1" 2>/dev/null) || return 0
	(cd "$MNT/untar/w$1/$n" && md5sum --quiet -c "$WORK/manifest") || fail "untar w$1: round $n does not check"
}

run_md5() {
	local n=0
	while [ $SECONDS -lt "$END" ]; do
		(cd "$MNT/ro" && md5sum --quiet -c "$WORK/manifest") || { fail "md5 w$1: mismatch"; return 1; }
		n=$((n + 1))
		echo $n >"$STATE/ops.md5.$1"
	done
}
check_md5() { (cd "$MNT/ro" && md5sum --quiet -c "$WORK/manifest") || fail "md5: the read-only tree does not check"; }

# rename: worker i owns files r<i>.0..3, each in one of d0..d3 ($STATE/ren.i.k).
ren_content() { awk -v w="$1" -v k="$2" 'BEGIN { for (l = 0; l < 700; l++) printf "rename w%s f%s line %d\n", w, k, l }'; }
run_rename() {
	local i=$1 k at to n=0
	for k in 0 1 2 3; do
		ren_content "$i" $k >"$STATE/ren.$i.$k.want"
		cp "$STATE/ren.$i.$k.want" "$MNT/ren/d$k/r$i.$k"
		echo $k >"$STATE/ren.$i.$k"
	done
	while [ $SECONDS -lt "$END" ]; do
		k=$((RANDOM % 4))
		at=$(cat "$STATE/ren.$i.$k")
		to=$((RANDOM % 4))
		[ "$to" = "$at" ] && continue
		mv "$MNT/ren/d$at/r$i.$k" "$MNT/ren/d$to/r$i.$k" || { fail "rename w$i: mv d$at -> d$to failed"; return 1; }
		echo "$to" >"$STATE/ren.$i.$k"
		cmp -s "$STATE/ren.$i.$k.want" "$MNT/ren/d$to/r$i.$k" || { fail "rename w$i: r$i.$k differs after the move"; return 1; }
		n=$((n + 1))
		echo $n >"$STATE/ops.rename.$i"
	done
}
check_rename() {
	local i=$1 k at d
	for k in 0 1 2 3; do
		at=$(cat "$STATE/ren.$i.$k" 2>/dev/null) || continue
		cmp -s "$STATE/ren.$i.$k.want" "$MNT/ren/d$at/r$i.$k" || fail "rename w$i: r$i.$k in d$at differs or is missing"
		for d in 0 1 2 3; do
			[ "$d" != "$at" ] && [ -e "$MNT/ren/d$d/r$i.$k" ] && fail "rename w$i: r$i.$k also in d$d"
		done
	done
	return 0
}

# append: worker i appends "w<i> line <n>" with fsync; $STATE/app.i is the
# number of acknowledged lines.
app_want() { awk -v w="$1" -v n="$2" 'BEGIN { for (l = 1; l <= n; l++) printf "w%s line %d\n", w, l }'; }
run_append() {
	local i=$1 n=0 f=$MNT/logs/w$1.log
	: >"$f"
	while [ $SECONDS -lt "$END" ]; do
		n=$((n + 1))
		printf 'w%s line %d\n' "$i" $n | dd of="$f" oflag=append conv=notrunc,fsync status=none ||
			{ fail "append w$i: line $n failed"; return 1; }
		echo $n >"$STATE/app.$i"
		if [ $((n % 25)) = 0 ]; then
			app_want "$i" $n | cmp -s - "$f" || { fail "append w$i: log differs after $n lines"; return 1; }
		fi
	done
}
check_append() {
	local n
	n=$(cat "$STATE/app.$1" 2>/dev/null) || return 0
	app_want "$1" "$n" | cmp -s - "$MNT/logs/w$1.log" || fail "append w$1: the log is not the $n acknowledged lines"
}

# shared: slot s (4 KiB) of shared.bin belongs to the worker with
# s % NSHARED == its rank; $STATE/slot.s is the last sequence number
# written there.
slot_block() { printf '%-4095s\n' "slot $1 w$2 seq $3"; }
slot_ok() { # slot_ok S FILE: FILE is a whole block of slot S, or zeros
	local s=$1 f=$2 head
	[ "$(stat -c %s "$f")" = 4096 ] || return 1
	if cmp -s "$f" <(head -c 4096 /dev/zero); then return 0; fi
	head=$(head -c 64 "$f" | tr -s ' ')
	[[ $head =~ ^slot\ $s\ w([0-9]+)\ seq\ ([0-9]+)\ $ ]] || return 1
	slot_block "$s" "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}" | cmp -s - "$f"
}
run_shared() {
	local i=$1 rank=$2 n=0 s r tmp=$STATE/sh.$1.tmp try
	while [ $SECONDS -lt "$END" ]; do
		n=$((n + 1))
		s=$(((RANDOM % (SLOTS / NSHARED)) * NSHARED + rank))
		slot_block $s "$i" $n | dd of="$MNT/shared.bin" bs=4096 seek=$s conv=notrunc status=none ||
			{ fail "shared w$i: write of slot $s failed"; return 1; }
		echo $n >"$STATE/slot.$s"
		echo "$i" >"$STATE/slotw.$s"
		echo $n >"$STATE/ops.shared.$i"
		for _ in 1 2 3; do
			r=$((RANDOM % SLOTS))
			# A read racing a write of the same page may see both (the
			# kernel does not lock pages for readers): a real fault stays.
			for try in 1 2 3; do
				dd if="$MNT/shared.bin" of="$tmp" bs=4096 skip=$r count=1 status=none && slot_ok $r "$tmp" && break
				[ $try = 3 ] && { fail "shared w$i: slot $r reads as neither zeros nor a whole slot"; return 1; }
				sleep 0.05
			done
		done
	done
}
check_shared() {
	local s n w tmp=$STATE/sh.check
	for ((s = 0; s < SLOTS; s++)); do
		dd if="$MNT/shared.bin" of="$tmp" bs=4096 skip=$s count=1 status=none
		if [ -e "$STATE/slot.$s" ]; then
			n=$(cat "$STATE/slot.$s") w=$(cat "$STATE/slotw.$s")
			slot_block $s "$w" "$n" | cmp -s - "$tmp" || fail "shared: slot $s is not w$w's write $n"
		else
			cmp -s "$tmp" <(head -c 4096 /dev/zero) || fail "shared: slot $s was never written but is not zeros"
		fi
	done
	[ "$(stat -c %s "$MNT/shared.bin")" = $((SLOTS * 4096)) ] || fail "shared: the file changed size"
}

# xattr: worker i churns user.a0..a3 on its files x<i>.0..3; $STATE/xa.i.k.a
# holds the expected value ("" = removed).
run_xattr() {
	local i=$1 n=0 k a f v got
	for k in 0 1 2 3; do echo "file $k" >"$MNT/xattr/x$i.$k"; done
	while [ $SECONDS -lt "$END" ]; do
		n=$((n + 1)) k=$((RANDOM % 4)) a=$((RANDOM % 4))
		f=$MNT/xattr/x$i.$k
		if [ $((RANDOM % 5)) = 0 ] && [ -s "$STATE/xa.$i.$k.$a" ]; then
			setfattr -x "user.a$a" "$f" || { fail "xattr w$i: remove user.a$a failed"; return 1; }
			: >"$STATE/xa.$i.$k.$a"
			echo $n >"$STATE/ops.xattr.$i"
			continue
		fi
		v="w$i-$n-$RANDOM"
		setfattr -n "user.a$a" -v "$v" "$f" || { fail "xattr w$i: set user.a$a failed"; return 1; }
		echo "$v" >"$STATE/xa.$i.$k.$a"
		got=$(getfattr --only-values -n "user.a$a" "$f" 2>/dev/null) || { fail "xattr w$i: get user.a$a failed"; return 1; }
		[ "$got" = "$v" ] || { fail "xattr w$i: user.a$a = $got, want $v"; return 1; }
		echo $n >"$STATE/ops.xattr.$i"
	done
}
check_xattr() {
	local i=$1 k a want got
	for k in 0 1 2 3; do
		[ "$(cat "$MNT/xattr/x$i.$k" 2>/dev/null)" = "file $k" ] || fail "xattr w$i: x$i.$k content"
		for a in 0 1 2 3; do
			[ -e "$STATE/xa.$i.$k.$a" ] || continue
			want=$(cat "$STATE/xa.$i.$k.$a")
			got=$(getfattr --only-values -n "user.a$a" "$MNT/xattr/x$i.$k" 2>/dev/null) || got=""
			[ "$got" = "$want" ] || fail "xattr w$i: x$i.$k user.a$a = '$got', want '$want'"
		done
	done
}

# ---- samples ----

sample() { # prints: seconds rss_kib fds goroutines heap_live_kib
	local rss fds gor heap
	rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$DAEMON_PID/status" 2>/dev/null) || rss=""
	fds=$(find "/proc/$DAEMON_PID/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)
	read -r _ gor _ heap <"$WORK/stats" 2>/dev/null || gor="" heap=""
	echo "$SECONDS ${rss:-0} $fds ${gor:-0} $(((${heap:-0} + 1023) / 1024))"
}

# keeps_growing COLUMN THRESHOLD: reads samples (after warm-up: the first
# third is dropped) and says yes when the last half of them all lie above
# the highest of the first half by more than THRESHOLD (absolute, or a
# percentage with %). A plateau with noise, or a rise that stops, passes; a
# steady climb fails. Fewer than 4 samples after warm-up: no verdict (the
# idle check below still applies).
keeps_growing() {
	awk -v col="$1" -v thr="$2" '
		{ v[n++] = $col }
		END {
			skip = int(n / 3); m = n - skip
			if (m < 4) exit 1
			h = int(m / 2)
			hi = -1; for (i = skip; i < skip + h; i++) if (v[i] > hi) hi = v[i]
			lo = -1; for (i = skip + h; i < n; i++) if (lo < 0 || v[i] < lo) lo = v[i]
			t = thr; if (t ~ /%$/) t = hi * substr(t, 1, length(t) - 1) / 100
			exit !(lo > hi + t)
		}'
}

# ---- run ----

note "idle baseline"
sleep 2
read -r _ RSS0 FDS0 GOR0 HEAP0 < <(sample)
echo "baseline: rss ${RSS0} KiB, heap ${HEAP0} KiB, fds ${FDS0}, goroutines ${GOR0}" >&2

note "running $WORKERS workers for ${DURATION}s"
END=$((SECONDS + DURATION))
shared_rank=0
for ((i = 0; i < WORKERS; i++)); do
	kind=${KINDS[i % 6]}
	if [ "$kind" = shared ]; then
		run_shared "$i" $shared_rank &
		shared_rank=$((shared_rank + 1))
	else
		"run_$kind" "$i" &
	fi
	WORKER_PIDS+=($!)
done

: >"$WORK/samples"
next=$SECONDS
while [ $SECONDS -lt "$END" ]; do
	if [ $SECONDS -ge $next ]; then
		sample >>"$WORK/samples"
		tail -1 "$WORK/samples" | awk '{printf "t=%4ds rss %7d KiB  heap %7d KiB  fds %4d  goroutines %5d\n", $1, $2, $5, $3, $4}' >&2
		next=$((next + SAMPLE))
	fi
	kill -0 "$DAEMON_PID" 2>/dev/null || { fail "the daemon died: $(tail -5 "$WORK/daemon.log")"; break; }
	sleep 1
done
sample >>"$WORK/samples"

# Workers stop at END; one that has not finished two minutes later hangs.
deadline=$((SECONDS + 120))
for p in "${WORKER_PIDS[@]}"; do
	while kill -0 "$p" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 1; done
	if kill -0 "$p" 2>/dev/null; then
		fail "worker pid $p hangs"
		kill "$p" 2>/dev/null || true
	fi
	wait "$p" 2>/dev/null || true
done
WORKER_PIDS=()

# check_all: every worker's check (the shared file once).
check_all() {
	local i kind
	for ((i = 0; i < WORKERS; i++)); do
		kind=${KINDS[i % 6]}
		[ "$kind" = shared ] || "check_$kind" "$i"
	done
	check_shared
}
note "checking every byte"
check_all

# Idle again: with the kernel's caches of the mount dropped (FORGETs), the
# daemon should be back near its baseline of fds and goroutines.
sync
if [ "$(id -u)" = 0 ]; then echo 2 >/proc/sys/vm/drop_caches; fi
sleep $((SAMPLE > 3 ? 3 : SAMPLE))
read -r _ RSS1 FDS1 GOR1 HEAP1 < <(sample)
echo "idle after: rss ${RSS1} KiB, heap ${HEAP1} KiB, fds ${FDS1}, goroutines ${GOR1}" >&2
[ "$FDS1" -le $((FDS0 + 8)) ] || fail "open fds did not come back: $FDS0 before, $FDS1 idle after"
[ "$GOR1" -le $((GOR0 + 20)) ] || fail "goroutines did not come back: $GOR0 before, $GOR1 idle after"
keeps_growing 2 "25%" && fail "RSS keeps growing: $(awk '{printf "%s ", $2}' "$WORK/samples")"
keeps_growing 5 "25%" && fail "the Go heap keeps growing: $(awk '{printf "%s ", $5}' "$WORK/samples")"
keeps_growing 3 16 && fail "open fds keep growing: $(awk '{printf "%s ", $3}' "$WORK/samples")"
keeps_growing 4 50 && fail "goroutines keep growing: $(awk '{printf "%s ", $4}' "$WORK/samples")"

note "remount and check again"
unmount_vault
mount_vault
check_all
if grep -qE 'panic|unexpected' "$WORK/daemon.log"; then fail "the daemon's log: $(grep -E 'panic|unexpected' "$WORK/daemon.log" | head -5)"; fi
unmount_vault

# ---- report ----

work_done=$(cat "$STATE"/untar.* 2>/dev/null | awk '{s += $1} END {print s + 0}')
lines=$(cat "$STATE"/app.* 2>/dev/null | awk '{s += $1} END {print s + 0}')
# ops_of KIND: operations all workers of KIND completed (see ops.KIND.i).
ops_of() { cat "$STATE"/ops."$1".* 2>/dev/null | awk '{s += $1} END {print s + 0}'; }
echo "soak: workers: $(for k in "${KINDS[@]}"; do printf '%s %d ' "$k" "$(count_of "$k")"; done)"
echo "soak: operations: md5 passes $(ops_of md5), renames $(ops_of rename), shared slot writes $(ops_of shared), xattr sets/removes $(ops_of xattr)"
awk -v d="$DURATION" -v w="$WORKERS" -v u="$work_done" -v l="$lines" '
	NR == 1 || $2 > rmax { rmax = $2 } NR == 1 || $3 > fmax { fmax = $3 } NR == 1 || $4 > gmax { gmax = $4 }
	NR == 1 || $5 > hmax { hmax = $5 }
	{ rl = $2; fl = $3; gl = $4; hl = $5 }
	END {
		printf "soak: %ds, %d workers: %d untar rounds, %d fsync appends\n", d, w, u, l
		printf "soak: samples %d; RSS max %d KiB (last %d); Go heap live max %d KiB (last %d); fds max %d (last %d); goroutines max %d (last %d)\n", NR, rmax, rl, hmax, hl, fmax, fl, gmax, gl
	}' "$WORK/samples"
echo "soak: idle before/after: rss ${RSS0}/${RSS1} KiB, heap ${HEAP0}/${HEAP1} KiB, fds ${FDS0}/${FDS1}, goroutines ${GOR0}/${GOR1}"
if [ -n "${SOAK_SAMPLES:-}" ]; then cp "$WORK/samples" "$SOAK_SAMPLES"; fi
if [ -s "$WORK/fail" ]; then
	echo "soak: FAIL" >&2
	sort -u "$WORK/fail" | head -20 >&2
	exit 1
fi
echo "soak: PASS"
