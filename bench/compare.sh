#!/usr/bin/env bash
# bench/compare.sh: the classic encrypted-filesystem benchmark, side by side.
#
# Runs, on a private tmpfs and interleaved over ROUNDS rounds, for plain
# tmpfs, encryptfs, gocryptfs and optionally encfs, cryfs and securefs:
#   WRITE  1000 MiB with dd conv=fsync                       (MiB/s)
#   READ   it back after dropping the page cache              (MiB/s)
#   UNTAR  linux-source-6.1 without drivers/ and Documentation/ (s)
#   MD5    every file, checked against a plain extraction      (s)
#   LS     ls -lR                                              (s)
#   RSYNC  rsync -an --itemize-changes from the plain copy     (s, and changed
#          entries, which must be 0: mtimes, modes, owners and sizes survive)
#   DU     du -sm of the ciphertext dir (MiB, and --apparent-size)
#   RM     rm -rf of the tree                                  (s)
#   SIZE   ciphertext bytes of an empty, a 1-byte and a 1,000,000-byte file
# and prints the median of each row per filesystem, with ratios against
# gocryptfs and tmpfs. Raw per-round numbers go to a results file.
#
# Usage (as root): bench/compare.sh
# Environment:
#   ROUNDS=3                 rounds (every filesystem once per round, interleaved)
#   PEERS="gocryptfs"        peers to include, any of: gocryptfs encfs cryfs securefs
#   ENCRYPTFS=/path/bin      encryptfs binary; default: go build ./cmd/encryptfs
#   SKIP_ENCRYPTFS=1         leave encryptfs out
#   WRITE_COUNT=8000         dd count of 128 KiB blocks (8000 = 1000 MiB)
#   TARBALL=/usr/src/linux-source-6.1.tar.xz
#   TMPFS_SIZE=10g           size of the private tmpfs
#   RESULTS=bench/results/<date>.txt   raw results file
#
# Results are noisy on a shared machine: compare medians of several rounds
# taken in one run, never figures from different runs.

set -euo pipefail
export LC_ALL=C

ROUNDS=${ROUNDS:-3}
PEERS=${PEERS:-gocryptfs}
WRITE_COUNT=${WRITE_COUNT:-8000}
TARBALL=${TARBALL:-/usr/src/linux-source-6.1.tar.xz}
TMPFS_SIZE=${TMPFS_SIZE:-10g}
SKIP_ENCRYPTFS=${SKIP_ENCRYPTFS:-0}

REPO=$(cd "$(dirname "$0")/.." && pwd)
STAMP=$(date -u +%Y%m%d-%H%M%S)
RESULTS=${RESULTS:-$REPO/bench/results/$STAMP.txt}
PASSWORD="benchmark password"
SRCDIR=linux-source-6.1

# contains WORD LIST...: whether WORD is one of LIST.
contains() {
	local want=$1 x
	shift
	for x in "$@"; do [ "$x" = "$want" ] && return 0; done
	return 1
}

die() { echo "compare.sh: $*" >&2; exit 1; }
note() { echo "== $*" >&2; }

[ "$(id -u)" = 0 ] || die "must run as root (mounts a tmpfs, drops caches)"
[ -r "$TARBALL" ] || die "no tarball at $TARBALL (apt-get install linux-source-6.1)"
case $ROUNDS in '' | *[!0-9]* | 0) die "ROUNDS must be a positive integer" ;; esac

# ---- cleanup: everything we mounted, in reverse order, even on Ctrl-C ----

WORK=""
MOUNTS=()       # mount points we mounted: the private tmpfs first, then FUSE ones
STARTED_PIDS=() # FUSE daemons we started in the foreground, as our children
declare -A PID_OF=() # mount point -> daemon PID (for the ones we started)

is_mounted() { mountpoint -q "$1" 2>/dev/null; }

unmount_one() {
	local mnt=$1 i
	if is_mounted "$mnt" && [ -n "${ENCRYPTFS_BIN:-}" ] && [ "${mnt##*/}" = encryptfs-mnt ]; then
		"$ENCRYPTFS_BIN" unmount "$mnt" >/dev/null 2>&1 || true
	fi
	for i in 1 2 3 4 5 6 7 8 9; do
		is_mounted "$mnt" || break
		fusermount3 -u "$mnt" >/dev/null 2>&1 || umount "$mnt" >/dev/null 2>&1 || true
		is_mounted "$mnt" || break
		sleep "0.$i"
	done
	if is_mounted "$mnt"; then
		note "unmount of $mnt is busy, detaching lazily"
		fusermount3 -uz "$mnt" >/dev/null 2>&1 || umount -l "$mnt" || true
	fi
	wait_daemon "$mnt"
}

# wait_daemon MNT: after an unmount, give the daemon we started for MNT up
# to 30 s to write out its state and exit (cryfs flushes blocks late).
wait_daemon() {
	local pid=${PID_OF[$1]:-} i
	[ -n "$pid" ] || return 0
	for i in $(seq 300); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		note "daemon $pid for $1 still running after unmount, stopping it"
		kill "$pid" 2>/dev/null || true
	fi
	wait "$pid" 2>/dev/null || true
	unset "PID_OF[$1]"
}

SUITE_PID="" # the running suite job, a process group of its own

cleanup() {
	local rc=$? i pid
	trap - EXIT INT TERM
	if [ -n "$SUITE_PID" ]; then
		kill -TERM -- "-$SUITE_PID" 2>/dev/null || true
		wait "$SUITE_PID" 2>/dev/null || true
	fi
	for ((i = ${#MOUNTS[@]} - 1; i >= 1; i--)); do
		unmount_one "${MOUNTS[$i]}"
	done
	for pid in "${STARTED_PIDS[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
	if [ "${#MOUNTS[@]}" -gt 0 ]; then
		unmount_one "${MOUNTS[0]}"
	fi
	if [ -n "$WORK" ] && [ -d "$WORK" ] && ! is_mounted "$WORK"; then
		rmdir "$WORK" 2>/dev/null || note "left $WORK behind (not empty)"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- the private tmpfs and the workload, prepared outside the timing ----

WORK=$(mktemp -d /tmp/encryptfs-bench.XXXXXX)
mount -t tmpfs -o "size=$TMPFS_SIZE,mode=0755" tmpfs "$WORK"
MOUNTS+=("$WORK")
mkdir -p "$WORK/ref" "$WORK/home" "$(dirname "$RESULTS")"
printf '%s\n' "$PASSWORD" >"$WORK/passfile"
chmod 600 "$WORK/passfile"

note "preparing the workload: $TARBALL without drivers/ and Documentation/"
xz -dc -T0 "$TARBALL" | tar -x -C "$WORK/ref" \
	--exclude="$SRCDIR/drivers" --exclude="$SRCDIR/Documentation"
tar -C "$WORK/ref" -cf "$WORK/linux.tar" "$SRCDIR"
(cd "$WORK/ref/$SRCDIR" && find . -type f -print0 | sort -z | xargs -0 md5sum) >"$WORK/ref.md5"
NFILES=$(wc -l <"$WORK/ref.md5")
NENTRIES=$(find "$WORK/ref/$SRCDIR" | wc -l)
TARMIB=$(du -m "$WORK/linux.tar" | cut -f1)
note "workload: $NFILES files ($NENTRIES entries), tar $TARMIB MiB"

# Fault in the tmpfs's memory once (a fresh VM page costs a hypervisor
# fault on first touch), so that the first filesystem measured does not
# pay for it and the others not.
note "warming up the tmpfs memory"
dd if=/dev/zero of="$WORK/warm" bs=1M count="$((WRITE_COUNT * 3 / 8))" status=none
rm -f "$WORK/warm"

# ---- filesystems: init, mount, unmount ----

ENCRYPTFS_BIN=""
FILESYSTEMS=(tmpfs)
SKIPPED=()

if [ "$SKIP_ENCRYPTFS" = 1 ]; then
	SKIPPED+=("encryptfs: SKIP_ENCRYPTFS=1")
elif [ -n "${ENCRYPTFS:-}" ]; then
	[ -x "$ENCRYPTFS" ] || die "ENCRYPTFS=$ENCRYPTFS is not executable"
	ENCRYPTFS_BIN=$ENCRYPTFS
elif [ -d "$REPO/cmd/encryptfs" ] && command -v go >/dev/null 2>&1; then
	note "building encryptfs from $REPO"
	if (cd "$REPO" && go build -o "$WORK/encryptfs" ./cmd/encryptfs) >"$WORK/build.log" 2>&1; then
		ENCRYPTFS_BIN=$WORK/encryptfs
	else
		SKIPPED+=("encryptfs: go build ./cmd/encryptfs failed: $(tail -n 3 "$WORK/build.log" | tr '\n' ' ')")
	fi
else
	SKIPPED+=("encryptfs: no \$ENCRYPTFS binary and no ./cmd/encryptfs to build yet")
fi
[ -n "$ENCRYPTFS_BIN" ] && FILESYSTEMS+=(encryptfs)

for peer in $PEERS; do
	case $peer in
	gocryptfs | encfs | cryfs | securefs) ;;
	*) die "unknown peer $peer (known: gocryptfs encfs cryfs securefs)" ;;
	esac
	if command -v "$peer" >/dev/null 2>&1; then
		FILESYSTEMS+=("$peer")
	else
		SKIPPED+=("$peer: not installed")
	fi
done

# fs_init FS CIPHER: make an empty filesystem (no-op for tmpfs).
fs_init() {
	local fs=$1 cipher=$2
	mkdir -p "$cipher" || return 1
	case $fs in
	encryptfs) "$ENCRYPTFS_BIN" init --passfile "$WORK/passfile" --kdf-memory 8 --kdf-time 1 "$cipher" ;;
	gocryptfs) gocryptfs -init -q -scryptn 10 -passfile "$WORK/passfile" "$cipher" ;;
	securefs) securefs create --pass "$PASSWORD" --rounds 1 "$cipher" ;;
	*) return 0 ;; # tmpfs needs nothing; encfs and cryfs create on first mount
	esac
}

# fs_mount FS CIPHER MNT: mount and wait until mounted (no-op for tmpfs,
# whose MNT is CIPHER). It runs in the main shell (it records mount points
# and PIDs for the cleanup trap), so every step checks its own status
# instead of relying on set -e.
fs_mount() {
	local fs=$1 cipher=$2 mnt=$3 i
	[ "$fs" = tmpfs ] && return 0
	mkdir -p "$mnt" || return 1
	contains "$mnt" "${MOUNTS[@]}" || MOUNTS+=("$mnt")
	case $fs in
	encryptfs)
		"$ENCRYPTFS_BIN" mount -f --passfile "$WORK/passfile" "$cipher" "$mnt" &
		;;
	gocryptfs)
		gocryptfs -f -q -passfile "$WORK/passfile" "$cipher" "$mnt" &
		;;
	encfs)
		encfs -f --standard --stdinpass "$cipher" "$mnt" <"$WORK/passfile" &
		;;
	cryfs)
		HOME=$WORK/home CRYFS_FRONTEND=noninteractive CRYFS_NO_UPDATE_CHECK=true \
			cryfs -f "$cipher" "$mnt" <"$WORK/passfile" &
		;;
	securefs)
		securefs mount --pass "$PASSWORD" "$cipher" "$mnt" &
		;;
	esac
	# The daemons run in the foreground as our children: we know their
	# PIDs, and after unmounting we wait for them to finish writing.
	PID_OF[$mnt]=$!
	STARTED_PIDS+=("$!")
	# Up to 2 minutes: cryfs derives its key with an expensive scrypt that
	# takes 20 s here on a busy machine.
	for i in $(seq 1200); do
		is_mounted "$mnt" && return 0
		if [ -n "${PID_OF[$mnt]:-}" ] && ! kill -0 "${PID_OF[$mnt]}" 2>/dev/null; then
			echo "$fs exited before mounting" >&2
			return 1
		fi
		sleep 0.1
	done
	echo "$fs did not mount at $mnt" >&2
	return 1
}

# fs_unmount FS MNT: unmount and wait for the daemon to exit.
fs_unmount() {
	[ "$1" = tmpfs ] && return 0
	unmount_one "$2"
	! is_mounted "$2"
}

# measure_sizes ROUND FS CIPHER MNT: ciphertext bytes of an empty, a 1-byte
# and a 1,000,000-byte file: the growth of the ciphertext dir between
# unmounted states, so that every daemon has written out its caches (cryfs
# keeps blocks in memory until unmount). Runs in the main shell.
measure_sizes() {
	local round=$1 fs=$2 cipher=$3 mnt=$4 size before after
	fs_unmount "$fs" "$mnt" || return 1
	for size in 0 1 1000000; do
		before=$(cipher_bytes "$cipher") || return 1
		fs_mount "$fs" "$cipher" "$mnt" || return 1
		head -c "$size" /dev/zero >"$mnt/size-$size" || return 1
		fs_unmount "$fs" "$mnt" || return 1
		after=$(cipher_bytes "$cipher") || return 1
		record "$round" "$fs" "size_${size}_B" "$((after - before))"
	done
}

# fs_teardown FS CIPHER MNT: unmount and delete everything.
fs_teardown() {
	local fs=$1 cipher=$2 mnt=$3
	[ "$fs" = tmpfs ] || unmount_one "$mnt"
	if is_mounted "$mnt"; then
		echo "$mnt is still mounted" >&2
		return 1
	fi
	rm -rf "$cipher" "$mnt" 2>/dev/null || { sleep 2 && rm -rf "$cipher" "$mnt"; }
	# cryfs remembers the filesystem ID per base dir under $HOME and refuses
	# a new filesystem at the same path next round: forget it.
	if [ "$fs" = cryfs ]; then
		rm -rf "${WORK:?}/home" && mkdir "$WORK/home"
	fi
}

# ---- measuring ----

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.3f", b - a }'; }

RAW=${RESULTS%.txt}.raw.tsv # kept outside the tmpfs, so a failed run leaves its numbers
: >"$RAW"
record() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >>"$RAW"; }

# cipher_bytes DIR: total size of the regular files under DIR.
cipher_bytes() { find "$1" -type f -printf '%s\n' | awk '{ s += $1 } END { printf "%d", s }'; }

drop_caches() { sync; echo 3 >/proc/sys/vm/drop_caches; }

# run_suite ROUND FS CIPHER MNT
run_suite() {
	local round=$1 fs=$2 cipher=$3 mnt=$4 t n mib

	drop_caches
	t=$(now)
	dd if=/dev/zero of="$mnt/zero" bs=128k count="$WRITE_COUNT" conv=fsync status=none
	t=$(elapsed "$t")
	mib=$(awk -v c="$WRITE_COUNT" 'BEGIN { printf "%.3f", c / 8 }')
	record "$round" "$fs" write_MiBps "$(awk -v m="$mib" -v t="$t" 'BEGIN { printf "%.1f", m / t }')"

	drop_caches
	t=$(now)
	dd if="$mnt/zero" of=/dev/null bs=128k status=none
	t=$(elapsed "$t")
	record "$round" "$fs" read_MiBps "$(awk -v m="$mib" -v t="$t" 'BEGIN { printf "%.1f", m / t }')"
	rm -f "$mnt/zero"

	drop_caches
	t=$(now)
	tar -xf "$WORK/linux.tar" -C "$mnt"
	record "$round" "$fs" untar_s "$(elapsed "$t")"

	t=$(now)
	(cd "$mnt/$SRCDIR" && { md5sum -c --quiet "$WORK/ref.md5" >"$WORK/md5.out" 2>&1 || true; })
	n=$(wc -l <"$WORK/md5.out")
	record "$round" "$fs" md5_s "$(elapsed "$t")"
	record "$round" "$fs" md5_bad "$n"

	t=$(now)
	ls -lR "$mnt/$SRCDIR" >/dev/null
	record "$round" "$fs" ls_s "$(elapsed "$t")"

	t=$(now)
	rsync -an --itemize-changes "$WORK/ref/$SRCDIR/" "$mnt/$SRCDIR/" >"$WORK/rsync.out"
	record "$round" "$fs" rsync_s "$(elapsed "$t")"
	n=$(wc -l <"$WORK/rsync.out")
	record "$round" "$fs" rsync_changed "$n"
	if [ "$n" != 0 ]; then
		head -n 100 "$WORK/rsync.out" >"${RESULTS%.txt}.rsync-$fs-r$round.txt"
		note "$fs: rsync reports $n changed entries, e.g.: $(head -n 3 "$WORK/rsync.out" | tr '\n' ' ')"
	fi

	sync
	record "$round" "$fs" du_MiB "$(du -sm "$cipher" | cut -f1)"
	record "$round" "$fs" du_apparent_MiB "$(du -sm --apparent-size "$cipher" | cut -f1)"

	t=$(now)
	rm -rf "${mnt:?}/$SRCDIR"
	record "$round" "$fs" rm_s "$(elapsed "$t")"
}

# ---- the rounds ----

note "filesystems: ${FILESYSTEMS[*]}; rounds: $ROUNDS"
for s in "${SKIPPED[@]}"; do note "skipped $s"; done

FAILED=()
for round in $(seq "$ROUNDS"); do
	for fs in "${FILESYSTEMS[@]}"; do
		note "round $round/$ROUNDS: $fs"
		cipher=$WORK/$fs-cipher
		mnt=$WORK/$fs-mnt
		[ "$fs" = tmpfs ] && mnt=$cipher
		if ! { fs_init "$fs" "$cipher" && fs_mount "$fs" "$cipher" "$mnt"; } >"$WORK/setup.log" 2>&1; then
			FAILED+=("$fs round $round: setup failed: $(tail -n 3 "$WORK/setup.log" | tr '\n' ' ')")
			note "${FAILED[-1]}"
			fs_teardown "$fs" "$cipher" "$mnt" || true
			continue
		fi
		# A subshell with its own set -e, outside any condition, so that
		# the first failing step stops this filesystem's suite. It runs as
		# a background job in its own process group (set -m) and we wait
		# for it: a signal then interrupts the wait at once, and the
		# cleanup stops the whole job (dd, tar...) before unmounting.
		set -m
		(
			set -e
			run_suite "$round" "$fs" "$cipher" "$mnt"
		) &
		SUITE_PID=$!
		set +m
		rc=0
		wait "$SUITE_PID" || rc=$?
		SUITE_PID=""
		if [ "$rc" != 0 ]; then
			FAILED+=("$fs round $round: suite failed with status $rc (see messages above)")
			note "${FAILED[-1]}"
		elif ! measure_sizes "$round" "$fs" "$cipher" "$mnt" >>"$WORK/setup.log" 2>&1; then
			FAILED+=("$fs round $round: size measurement failed: $(tail -n 3 "$WORK/setup.log" | tr '\n' ' ')")
			note "${FAILED[-1]}"
		fi
		fs_teardown "$fs" "$cipher" "$mnt"
	done
done

# ---- the report ----

# median FS METRIC: median of the recorded values (empty if none).
median() {
	awk -F'\t' -v fs="$1" -v m="$2" '$2 == fs && $3 == m { print $4 }' "$RAW" | sort -g |
		awk '{ v[NR] = $1 }
		END {
			if (NR == 0) exit
			m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			if (m == int(m)) printf "%d\n", m; else printf "%.3f\n", m
		}'
}

METRICS=(write_MiBps read_MiBps untar_s md5_s md5_bad ls_s rsync_s rsync_changed du_MiB du_apparent_MiB rm_s size_0_B size_1_B size_1000000_B)

# kind METRIC: thr (higher is better), time (lower is better), size
# (lower is better) or check (must be 0, no ratio).
kind() {
	case $1 in
	*_MiBps) echo thr ;;
	*_s) echo time ;;
	md5_bad | rsync_changed) echo check ;;
	*) echo size ;;
	esac
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b + 0 == 0) print "-"; else printf "%.2f", a / b }'; }

report() {
	local fs m line v ref
	echo "EncryptFS benchmark $STAMP on $(uname -r), $(nproc) CPUs, private tmpfs"
	echo "workload: $NFILES files ($NENTRIES entries, $TARMIB MiB tar) from $(basename "$TARBALL") without drivers/ and Documentation/"
	echo "rounds: $ROUNDS (interleaved); figures are medians; the machine is shared, so expect noise"
	for s in "${SKIPPED[@]}"; do echo "skipped $s"; done
	for s in "${FAILED[@]}"; do echo "FAILED $s"; done
	echo
	line=$(printf '%-16s' metric)
	for fs in "${FILESYSTEMS[@]}"; do line+=$(printf '%12s' "$fs"); done
	echo "$line"
	for m in "${METRICS[@]}"; do
		line=$(printf '%-16s' "$m")
		for fs in "${FILESYSTEMS[@]}"; do
			v=$(median "$fs" "$m")
			line+=$(printf '%12s' "${v:--}")
		done
		echo "$line"
	done
	echo
	echo "ratios = this filesystem / reference, medians:"
	echo "  time and size rows: < 1 means faster / smaller than the reference"
	echo "  throughput rows (MiB/s): > 1 means faster than the reference"
	for ref in gocryptfs tmpfs; do
		contains "$ref" "${FILESYSTEMS[@]}" || continue
		line=$(printf '%-16s' "vs $ref")
		for fs in "${FILESYSTEMS[@]}"; do line+=$(printf '%12s' "$fs"); done
		echo "$line"
		for m in "${METRICS[@]}"; do
			[ "$(kind "$m")" = check ] && continue
			line=$(printf '%-16s' "$m")
			for fs in "${FILESYSTEMS[@]}"; do
				line+=$(printf '%12s' "$(ratio "$(median "$fs" "$m")" "$(median "$ref" "$m")")")
			done
			echo "$line"
		done
	done
}

{
	report
	echo
	echo "raw: round filesystem metric value"
	cat "$RAW"
} >"$RESULTS"
report
rm -f "$RAW"
echo
echo "raw per-round numbers: $RESULTS"
[ "${#FAILED[@]}" = 0 ] || exit 1
