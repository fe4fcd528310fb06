#!/usr/bin/env bash
# bench/ddloop.sh: the plain dd loop of issue 22's WRITE row, peers beside
# encryptfs: in each round, for each system in a rotating order, a new
# filesystem on a private tmpfs, mounted, one dd of 1000 MiB of zeros
# (bs=128k conv=fsync, compare.sh's WRITE), unmounted and removed.
# Nothing else runs in the tmpfs, so this is the write "on a quiet
# machine" that compare.sh's rounds place before and after the small-file
# rows.
#
# Usage (as root): bench/ddloop.sh [ENCRYPTFS-BINARY]
# Environment: ROUNDS=5, COUNT=8000 (128 KiB blocks), SYSTEMS="securefs
# gocryptfs encryptfs-classic encryptfs-uring".
# Prints one line per dd, then the medians (min..max) in MiB/s and each
# encryptfs column over each peer.
set -euo pipefail
export LC_ALL=C
[ "$(id -u)" = 0 ] || { echo "ddloop.sh: must run as root (tmpfs)" >&2; exit 1; }
ROUNDS=${ROUNDS:-5}
COUNT=${COUNT:-8000}
read -r -a SYSTEMS <<<"${SYSTEMS:-securefs gocryptfs encryptfs-classic encryptfs-uring}"
BIN=${1:-}
if [ -z "$BIN" ]; then
	BIN=$(mktemp /tmp/encryptfs-ddloop-bin.XXXXXX)
	(cd "$(dirname "$0")/.." && go build -o "$BIN" ./cmd/encryptfs)
fi
for s in "${SYSTEMS[@]}"; do
	case $s in
	securefs | gocryptfs) command -v "$s" >/dev/null || apt-get install -y -qq "$s" >/dev/null ;;
	esac
done
W=$(mktemp -d /tmp/encryptfs-ddloop.XXXXXX)
mount -t tmpfs -o size=4g tmpfs "$W"
PID=
cleanup() {
	mountpoint -q "$W/m" 2>/dev/null && { umount "$W/m" || umount -l "$W/m"; }
	if [ -n "$PID" ]; then wait "$PID" 2>/dev/null || true; fi
	umount "$W" && rmdir "$W"
}
trap cleanup EXIT
PASSWORD=ddloop-password
echo "$PASSWORD" >"$W/pw"

# one SYSTEM: MiB/s of one dd into a new filesystem of SYSTEM.
one() {
	local s=$1 c=$W/c m=$W/m
	rm -rf "$c" && mkdir -p "$c" "$m"
	case $s in
	securefs)
		securefs create --pass "$PASSWORD" --rounds 1 "$c" >/dev/null
		securefs mount --pass "$PASSWORD" "$c" "$m" >/dev/null 2>&1 &
		;;
	gocryptfs)
		gocryptfs -init -q -scryptn 10 -passfile "$W/pw" "$c"
		gocryptfs -f -q -passfile "$W/pw" "$c" "$m" >/dev/null 2>&1 &
		;;
	encryptfs-*)
		"$BIN" init --passfile "$W/pw" --kdf-memory 8 --kdf-time 1 "$c" >/dev/null 2>&1
		"$BIN" mount -f --transport "${s#encryptfs-}" --passfile "$W/pw" "$c" "$m" >/dev/null 2>&1 &
		;;
	esac
	PID=$!
	for _ in $(seq 300); do mountpoint -q "$m" && break; sleep 0.1; done
	mountpoint -q "$m" || { echo "ddloop.sh: $s did not mount" >&2; exit 1; }
	local secs
	secs=$(dd if=/dev/zero of="$m/f" bs=128k count="$COUNT" conv=fsync 2>&1 | awk '/copied/ {print $(NF-3)}')
	umount "$m"
	wait "$PID" || true
	PID=
	awk -v s="$secs" -v n="$COUNT" 'BEGIN { printf "%.0f\n", n * 128 / 1024 / s }'
}

declare -A RES
for r in $(seq "$ROUNDS"); do
	n=${#SYSTEMS[@]}
	for i in $(seq 0 $((n - 1))); do
		s=${SYSTEMS[$(((i + r - 1) % n))]}
		v=$(one "$s")
		RES[$s]="${RES[$s]:-} $v"
		echo "round $r $s $v MiB/s"
	done
done
median() { tr ' ' '\n' | sed '/^$/d' | sort -n | awk '{a[NR]=$1} END {m = NR % 2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2; printf "%.0f (%d..%d)", m, a[1], a[NR]}'; }
echo "medians of $ROUNDS rounds, MiB/s (dd bs=128k count=$COUNT conv=fsync):"
declare -A MED
for s in "${SYSTEMS[@]}"; do
	line=$(echo "${RES[$s]}" | median)
	MED[$s]=${line%% *}
	echo "  $s $line"
done
for e in "${SYSTEMS[@]}"; do
	[[ $e == encryptfs-* ]] || continue
	for p in "${SYSTEMS[@]}"; do
		[[ $p == encryptfs-* ]] && continue
		awk -v e="${MED[$e]}" -v p="${MED[$p]}" -v en="$e" -v pn="$p" 'BEGIN { printf "  %s / %s: %.2f\n", en, pn, e / p }'
	done
done
