#!/usr/bin/env bash
# bench/memory.sh: does the daemon's memory stay flat over repeated
# untar/rm cycles (issue 9: "the daemon's RSS stays flat over 5 untar/rm
# cycles")? For each transport, one mount on a private tmpfs runs CYCLES
# cycles of tar -x of the tree bench/compare.sh uses (linux-source-6.1
# without drivers/ and Documentation/, about 38k files) and rm -rf of it,
# and prints the daemon's VmRSS and VmHWM (/proc/PID/status) after the
# mount and after each cycle, then the last cycle's RSS over the first's.
# First, the idle RSS after an unlock at the default KDF cost (Argon2id's
# 512 MiB buffer, issue 22: "idle RSS <= 64 MiB in every mount mode") of
# a mount in the foreground (-f, as systemd runs it) and a daemonized one
# (as a user or fstab runs it), per transport. (The cycles use a cheap
# KDF: the unlock is not what they measure.) bench/compare.sh reports the
# peak during each of its rows.
#
# Usage (as root): bench/memory.sh [--quick]
#   --quick: Go's src/net, src/crypto and src/runtime (about 3000 files)
#            instead of the kernel tree.
# Environment: CYCLES=5, TRANSPORTS="classic uring" (uring is skipped
# when the kernel cannot), ENCRYPTFS=/path/bin (default: built from this
# tree), TARBALL=/usr/src/linux-source-6.1.tar.xz.
set -euo pipefail
export LC_ALL=C

CYCLES=${CYCLES:-5}
TRANSPORTS=${TRANSPORTS:-classic uring}
TARBALL=${TARBALL:-/usr/src/linux-source-6.1.tar.xz}
QUICK=0
[ "${1:-}" = --quick ] && QUICK=1
REPO=$(cd "$(dirname "$0")/.." && pwd)
die() { echo "memory.sh: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "must run as root (tmpfs)"

WORK=$(mktemp -d /tmp/encryptfs-memory.XXXXXX)
mount -t tmpfs -o size=6g tmpfs "$WORK"
PID=""
cleanup() {
	mountpoint -q "$WORK/mnt" 2>/dev/null && { umount "$WORK/mnt" || umount -l "$WORK/mnt"; }
	if [ -n "$PID" ]; then wait "$PID" 2>/dev/null || true; fi
	umount "$WORK" 2>/dev/null || umount -l "$WORK"
	rmdir "$WORK"
}
trap cleanup EXIT

BIN=${ENCRYPTFS:-$WORK/encryptfs}
[ -n "${ENCRYPTFS:-}" ] || (cd "$REPO" && go build -o "$BIN" ./cmd/encryptfs)
if [ "$QUICK" = 1 ]; then
	tar -C "$(go env GOROOT)/src" -cf "$WORK/tree.tar" net crypto runtime
else
	[ -r "$TARBALL" ] || die "no tarball at $TARBALL (apt-get install linux-source-6.1, or --quick)"
	TREE=linux-source-6.1
	mkdir "$WORK/ref"
	xz -dc -T0 "$TARBALL" | tar -x -C "$WORK/ref" \
		--exclude="$TREE/drivers" --exclude="$TREE/Documentation"
	tar -C "$WORK/ref" -cf "$WORK/tree.tar" "$TREE"
	rm -rf "$WORK/ref"
fi
TOP=$(tar -tf "$WORK/tree.tar" | sed 's|/.*||' | sort -u)
echo "tree: $(tar -tf "$WORK/tree.tar" | wc -l) entries; $CYCLES cycles of untar + rm -rf per transport"
echo "benchmark password" >"$WORK/pw"
"$BIN" init --passfile "$WORK/pw" --kdf-memory 8 --kdf-time 1 "$WORK/cipher" >/dev/null
mkdir "$WORK/mnt"

# kib FIELD: the daemon's FIELD (VmRSS, VmHWM) in KiB
kib() { awk -v f="$1:" '$1 == f {print $2}' "/proc/$PID/status"; }
mib() { awk -v k="$1" 'BEGIN {printf "%.1f", k / 1024}'; }

# daemon_pid: the PID of the daemonized mount of $WORK/mnt (the one
# running $BIN whose command line ends with the mount point).
daemon_pid() {
	local p
	for p in /proc/[0-9]*; do
		[ "$(readlink "$p/exe" 2>/dev/null)" = "$(readlink -f "$BIN")" ] || continue
		[[ $(tr '\0' ' ' <"$p/cmdline" 2>/dev/null) == *" $WORK/mnt " ]] && { echo "${p#/proc/}"; return 0; }
	done
	return 1
}

echo "idle RSS after an unlock at the default KDF cost (2 s after the mount):"
"$BIN" init --passfile "$WORK/pw" "$WORK/cipher-kdf" >/dev/null
printf "  %-20s %10s %10s\n" "" "VmRSS MiB" "VmHWM MiB"
for tr in $TRANSPORTS; do
	for mode in foreground daemonized; do
		if [ "$mode" = foreground ]; then
			"$BIN" mount -f --passfile "$WORK/pw" --transport "$tr" "$WORK/cipher-kdf" "$WORK/mnt" 2>"$WORK/log" &
			PID=$!
			for _ in $(seq 300); do mountpoint -q "$WORK/mnt" && break; sleep 0.1; done
		else
			"$BIN" mount --passfile "$WORK/pw" --transport "$tr" "$WORK/cipher-kdf" "$WORK/mnt" 2>"$WORK/log" || true
			PID=$(daemon_pid) || PID=""
		fi
		if ! mountpoint -q "$WORK/mnt" || [ -z "$PID" ]; then
			echo "  $tr $mode: skipped: $(tail -1 "$WORK/log")"
			[ -z "$PID" ] || { wait "$PID" 2>/dev/null || true; }
			PID=""
			continue
		fi
		sleep 2
		printf "  %-20s %10s %10s\n" "$tr $mode" "$(mib "$(kib VmRSS)")" "$(mib "$(kib VmHWM)")"
		umount "$WORK/mnt"
		for _ in $(seq 100); do kill -0 "$PID" 2>/dev/null || break; sleep 0.1; done
		[ "$mode" = foreground ] && { wait "$PID" || true; }
		PID=""
	done
done

for tr in $TRANSPORTS; do
	"$BIN" mount -f --passfile "$WORK/pw" --transport "$tr" "$WORK/cipher" "$WORK/mnt" 2>"$WORK/log" &
	PID=$!
	for _ in $(seq 100); do mountpoint -q "$WORK/mnt" && break; sleep 0.1; done
	if ! mountpoint -q "$WORK/mnt"; then
		wait "$PID" || true
		PID=""
		echo "$tr: skipped: $(tail -1 "$WORK/log")"
		continue
	fi
	echo "$tr ($(grep -o 'transport: [^)]*' "$WORK/log" || echo "transport: ?")):"
	printf "  %-8s %10s %10s %8s\n" "" "VmRSS MiB" "VmHWM MiB" "s"
	printf "  %-8s %10s %10s\n" mounted "$(mib "$(kib VmRSS)")" "$(mib "$(kib VmHWM)")"
	first=""
	for c in $(seq "$CYCLES"); do
		t0=$(date +%s.%N)
		tar -C "$WORK/mnt" -xf "$WORK/tree.tar"
		# shellcheck disable=SC2086 # TOP is a list of names
		(cd "$WORK/mnt" && rm -rf $TOP)
		t1=$(date +%s.%N)
		rss=$(kib VmRSS)
		[ -n "$first" ] || first=$rss
		printf "  %-8s %10s %10s %8.1f\n" "cycle $c" "$(mib "$rss")" "$(mib "$(kib VmHWM)")" "$(echo "$t1 - $t0" | bc)"
	done
	echo "  last/first cycle RSS: $(awk -v a="$rss" -v b="$first" 'BEGIN {printf "%.2f", a / b}')"
	umount "$WORK/mnt"
	wait "$PID" || true
	PID=""
done
