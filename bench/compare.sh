#!/usr/bin/env bash
# bench/compare.sh: the classic encrypted-filesystem benchmark, side by side.
#
# Every column runs once per round, interleaved, on a private tmpfs so that
# no disk noise gets in. Each encryptfs column runs next to its twins (v1,
# d, b below), and the order rotates from round to round and runs backwards
# in even rounds, so that no column always follows the same one (see
# round_order):
#
#   tmpfs              the backing store itself (the reference)
#   loopback           go-fuse's example loopback, no crypto (the FUSE ceiling),
#                      built from the go-fuse version in go.mod, kernel
#                      passthrough off so that reads and writes reach it
#   gocryptfs securefs the peers (Debian packages; encfs and cryfs on --only)
#   encryptfs-classic  encryptfs mount --transport classic (/dev/fuse)
#   encryptfs-uring    encryptfs mount --transport uring (FUSE over io_uring)
#   encryptfs-v1-classic, encryptfs-v1-uring
#                      the same on a format-1 vault (init --format 1): the
#                      cost of format 2 (binding, file roots, freshness)
#                      is the ratio of each encryptfs column to its v1 twin
#   encryptfs-d-classic, encryptfs-d-uring (on --only)
#                      the same daemonized (mount without -f, as a user
#                      or fstab runs it) instead of -f (as systemd runs it)
#   encryptfs-b-classic, encryptfs-b-uring (on --only, with ENCRYPTFS_B)
#                      another encryptfs binary, e.g. an older commit: an
#                      A/B of two builds beside the peers, in one run
#
# Rows:
#   WRITE        dd 1000 MiB of zeros, bs=128k conv=fsync          MiB/s
#   READ         read it back, the file's page cache dropped first
#                (fadvise DONTNEED through dd iflag=nocache)       MiB/s
#   READ cold    read it back after drop_caches                    MiB/s
#   STREAM       EncFS's stream_write: 100 MiB of zeros in 4 KiB
#                writes (dd bs=4k count=25600 conv=fsync)          MiB/s
#   URANDOM      dd 500 MB from /dev/urandom, bs=4k (count=128000,
#                conv=fsync; /dev/urandom's own speed caps it)     MiB/s
#   UNTAR MD5 LS RSYNC DU RM on linux-source-6.1 without drivers/ and
#                Documentation/ (about 38k files): tar -x, md5sum -c,
#                ls -lR, rsync -an from the plain copy, du -s, rm -rf   s
#   (The streaming rows run first in odd rounds and after the small-file
#   rows in even ones; WRITE is reported for each place separately.)
#   memory       the daemon's RSS once mounted, and its peak during each
#                row (VmHWM, reset through /proc/PID/clear_refs between
#                rows), MiB
#   checks       md5 mismatches and rsync's changed entries (both must be 0:
#                contents, sizes, mtimes, modes and owners survive)
#   sizes        du -sm and -sk of the ciphertext dir, encryptfs's freshness files
#                in it, and the ciphertext bytes of an
#                empty, a 1-byte and a 1,000,000-byte file
#   fio          sequential and random reads and writes (psync, buffered,
#                the page cache dropped before each job) at 4 KiB, 128 KiB
#                and 1 MiB, in MiB/s and as a percentage of tmpfs
#
# Output: a markdown table (median and min..max over the rounds per row and
# column; the last columns are encryptfs / best peer, "slower" marked),
# raw per-round CSV, and an SVG chart of every speed row's ratio to the best
# peer, in bench/results/compare-<date>[-quick].{md,csv,svg}.
#
# Usage (as root): bench/compare.sh [--rounds N] [--quick] [--only LIST] [--no-fio]
#   --rounds N   rounds (default 3; 1 with --quick)
#   --quick      small sizes and a small tree (the repository itself): a smoke
#                run of well under a minute
#   --only LIST  columns, comma-separated, from: tmpfs loopback gocryptfs
#                securefs encfs cryfs encryptfs-classic encryptfs-uring
#                encryptfs-v1-classic encryptfs-v1-uring encryptfs-d-classic
#                encryptfs-d-uring encryptfs-b-classic encryptfs-b-uring
#   --no-fio     leave the fio rows out
# Environment: ENCRYPTFS=/path/bin (default: go build ./cmd/encryptfs here),
#   ENCRYPTFS_B=/path/bin and B_NAME=label for the encryptfs-b-* columns,
#   TARBALL=/usr/src/linux-source-6.1.tar.xz, TMPFS_SIZE=12g,
#   RESULTS_DIR=bench/results.
# Missing tools are installed with apt-get when running as root. Columns that
# cannot run (a peer that does not install, a kernel without FUSE over
# io_uring) are skipped, and the table says why.
#
# The machine may be shared: compare the ratios of one run, never figures
# from different runs.

set -euo pipefail
export LC_ALL=C

REPO=$(cd "$(dirname "$0")/.." && pwd)
ALL_COLUMNS=(tmpfs loopback gocryptfs securefs encfs cryfs encryptfs-classic encryptfs-uring encryptfs-v1-classic encryptfs-v1-uring
	encryptfs-d-classic encryptfs-d-uring encryptfs-b-classic encryptfs-b-uring)
DEFAULT_COLUMNS=(tmpfs loopback gocryptfs securefs encryptfs-classic encryptfs-uring encryptfs-v1-classic encryptfs-v1-uring)
URING_PARAM=${URING_PARAM:-/sys/module/fuse/parameters/enable_uring} # overridable to test the skip
PASSWORD="benchmark password"

die() { echo "compare.sh: $*" >&2; exit 1; }
note() { echo "== $*" >&2; }
usage() { sed -n '/^# Usage/,/^#   RESULTS_DIR/p' "$0" | sed 's/^# \{0,1\}//'; }

# contains WORD LIST...: whether WORD is one of LIST.
contains() {
	local want=$1 x
	shift
	for x in "$@"; do [ "$x" = "$want" ] && return 0; done
	return 1
}

# ---- options ----

ROUNDS=""
QUICK=0
FIO=1
COLUMNS=("${DEFAULT_COLUMNS[@]}")
while [ $# -gt 0 ]; do
	case $1 in
	--rounds) [ $# -ge 2 ] || die "--rounds needs a number"; ROUNDS=$2; shift 2 ;;
	--rounds=*) ROUNDS=${1#*=}; shift ;;
	--quick) QUICK=1; shift ;;
	--no-fio) FIO=0; shift ;;
	--only) [ $# -ge 2 ] || die "--only needs a list of columns"; IFS=', ' read -r -a COLUMNS <<<"$2"; shift 2 ;;
	--only=*) IFS=', ' read -r -a COLUMNS <<<"${1#*=}"; shift ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; die "unknown argument: $1" ;;
	esac
done
[ -n "$ROUNDS" ] || { [ "$QUICK" = 1 ] && ROUNDS=1 || ROUNDS=3; }
case $ROUNDS in '' | *[!0-9]* | 0) die "--rounds must be a positive integer, not '$ROUNDS'" ;; esac
[ "${#COLUMNS[@]}" -gt 0 ] || die "--only: no columns given"
for c in "${COLUMNS[@]}"; do
	contains "$c" "${ALL_COLUMNS[@]}" || die "unknown column '$c' (known: ${ALL_COLUMNS[*]})"
done

if [ "$QUICK" = 1 ]; then
	WRITE_COUNT=160     # 20 MiB in 128 KiB blocks
	STREAM_COUNT=2560   # 10 MiB in 4 KiB blocks
	URANDOM_COUNT=5120  # 20 MiB in 4 KiB blocks
	FIO_SIZE=4m
	TMPFS_SIZE=${TMPFS_SIZE:-2g}
	SUFFIX=-quick
else
	WRITE_COUNT=8000    # 1000 MiB
	STREAM_COUNT=25600  # 100 MiB: EncFS's stream_write
	URANDOM_COUNT=128000 # 500 MB (524288000 bytes), the seed's dd
	FIO_SIZE=64m
	TMPFS_SIZE=${TMPFS_SIZE:-12g}
	SUFFIX=""
fi
TARBALL=${TARBALL:-/usr/src/linux-source-6.1.tar.xz}
RESULTS_DIR=${RESULTS_DIR:-$REPO/bench/results}
DATE=$(date -u +%Y-%m-%d)
BASE=$RESULTS_DIR/compare-$DATE$SUFFIX
CSV=$BASE.csv

[ "$(id -u)" = 0 ] || die "must run as root (mounts a tmpfs, drops caches, may turn on FUSE over io_uring)"

# ---- prerequisites: installed with apt-get when missing ----

APT_UPDATED=0
# apt_install PKG...: install Debian packages; fails quietly (status 1).
apt_install() {
	command -v apt-get >/dev/null 2>&1 || return 1
	note "installing $* (apt-get)"
	if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null 2>&1; then
		[ "$APT_UPDATED" = 1 ] && return 1
		APT_UPDATED=1
		apt-get update -qq >/dev/null 2>&1 || return 1
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null 2>&1 || return 1
	fi
}

# need CMD PKG: make sure CMD exists, installing PKG if not; status 1 if
# that fails.
need() {
	command -v "$1" >/dev/null 2>&1 && return 0
	apt_install "$2" && command -v "$1" >/dev/null 2>&1
}

for tool in dd:coreutils md5sum:coreutils tar:tar xz:xz-utils rsync:rsync \
	mountpoint:util-linux fusermount3:fuse3 python3:python3-minimal; do
	need "${tool%%:*}" "${tool#*:}" || die "${tool%%:*} is missing and apt-get install ${tool#*:} failed"
done
if [ "$FIO" = 1 ]; then
	need fio fio || die "fio is missing and apt-get install fio failed (or run with --no-fio)"
fi
CHART=1
if ! need gnuplot gnuplot-nox; then
	note "gnuplot is missing and apt-get install gnuplot-nox failed: no chart"
	CHART=0
fi
if [ "$QUICK" = 0 ] && [ ! -r "$TARBALL" ]; then
	if [ "$TARBALL" = /usr/src/linux-source-6.1.tar.xz ]; then
		apt_install linux-source-6.1 || true
	fi
	[ -r "$TARBALL" ] || die "no tarball at $TARBALL (apt-get install linux-source-6.1, or --quick)"
fi

# ---- cleanup: everything we mounted, in reverse order, even on Ctrl-C ----

WORK=""
MOUNTS=()            # mount points we mounted: the private tmpfs first
declare -A PID_OF=() # mount point -> PID of the daemon we started for it
SUITE_PID=""         # the running suite job, a process group of its own

is_mounted() { mountpoint -q "$1" 2>/dev/null; }

# wait_daemon MNT: after an unmount, give the daemon we started for MNT up
# to 30 s to exit (cryfs flushes blocks late), then stop it by its PID.
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

unmount_one() {
	local mnt=$1 i
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

cleanup() {
	local rc=$? i
	trap - EXIT INT TERM
	if [ -n "$SUITE_PID" ]; then
		kill -TERM -- "-$SUITE_PID" 2>/dev/null || true
		wait "$SUITE_PID" 2>/dev/null || true
	fi
	for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do
		unmount_one "${MOUNTS[$i]}"
	done
	for i in "${!PID_OF[@]}"; do # daemons that never mounted
		kill "${PID_OF[$i]}" 2>/dev/null || true
	done
	if [ -n "$WORK" ] && [ -d "$WORK" ] && ! is_mounted "$WORK"; then
		rmdir "$WORK" 2>/dev/null || note "left $WORK behind (not empty)"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

WORK=$(mktemp -d /tmp/encryptfs-bench.XXXXXX)
mount -t tmpfs -o "size=$TMPFS_SIZE,mode=0755" tmpfs "$WORK"
# encryptfs keeps each vault's freshness state (format.md §15) outside
# CIPHERDIR: here, not in root's home.
export XDG_STATE_HOME=$WORK/state
MOUNTS+=("$WORK")
mkdir -p "$WORK/ref" "$WORK/home" "$WORK/logs" "$RESULTS_DIR"
printf '%s\n' "$PASSWORD" >"$WORK/passfile"
chmod 600 "$WORK/passfile"

# ---- the columns: build or find each one, skip visibly what cannot run ----

SKIPPED=() # "column: why"
RUN=()     # the columns that run
skip() { SKIPPED+=("$1: $2"); note "skipping $1: $2"; }

ENCRYPTFS_BIN=""
COMMIT=$(git -C "$REPO" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
git -C "$REPO" diff --quiet HEAD -- . ':!bench' 2>/dev/null || COMMIT="$COMMIT+local changes"
if [[ " ${COLUMNS[*]} " == *" encryptfs-"* ]]; then
	if [ -n "${ENCRYPTFS:-}" ]; then
		[ -x "$ENCRYPTFS" ] || die "ENCRYPTFS=$ENCRYPTFS is not executable"
		ENCRYPTFS_BIN=$ENCRYPTFS
		COMMIT="$ENCRYPTFS (given)"
	else
		need go golang-go || die "go is missing: cannot build encryptfs (or set ENCRYPTFS=)"
		note "building encryptfs from $REPO ($COMMIT)"
		(cd "$REPO" && go build -o "$WORK/encryptfs" ./cmd/encryptfs) >"$WORK/logs/build.log" 2>&1 ||
			die "go build ./cmd/encryptfs failed: $(tail -n 5 "$WORK/logs/build.log")"
		ENCRYPTFS_BIN=$WORK/encryptfs
	fi
fi
ENCRYPTFS_B_BIN=""
if [[ " ${COLUMNS[*]} " == *" encryptfs-b-"* ]]; then
	[ -n "${ENCRYPTFS_B:-}" ] || die "the encryptfs-b-* columns need ENCRYPTFS_B=/path/to/another/encryptfs"
	[ -x "$ENCRYPTFS_B" ] || die "ENCRYPTFS_B=$ENCRYPTFS_B is not executable"
	ENCRYPTFS_B_BIN=$ENCRYPTFS_B
fi

# bin_of COL: the encryptfs binary of an encryptfs column.
bin_of() {
	case $1 in
	encryptfs-b-*) echo "$ENCRYPTFS_B_BIN" ;;
	*) echo "$ENCRYPTFS_BIN" ;;
	esac
}

URING_NOTE=""
# uring_ready: FUSE over io_uring can be used; sets URING_NOTE if not.
uring_ready() {
	if [ ! -e "$URING_PARAM" ]; then
		URING_NOTE="the kernel ($(uname -r)) has no FUSE over io_uring: $URING_PARAM is missing (needs Linux 6.14+ with CONFIG_FUSE_IO_URING)"
		return 1
	fi
	if [ "$(cat "$URING_PARAM")" != Y ]; then
		if ! echo Y >"$URING_PARAM" 2>/dev/null || [ "$(cat "$URING_PARAM")" != Y ]; then
			URING_NOTE="could not turn on $URING_PARAM"
			return 1
		fi
		note "turned on FUSE over io_uring ($URING_PARAM=Y); it stays on"
	fi
}

LOOPBACK_BIN=""
gofuse_version() { (cd "$REPO" && go list -m -f '{{.Version}}' github.com/hanwen/go-fuse/v2); }

# build_loopback: go-fuse's example/loopback, as a temporary module that
# uses the go-fuse and x/sys versions of go.mod from the module cache, with
# one change: kernel passthrough off. The example turns it on when run as
# root, and then the kernel reads and writes the backing file itself, so
# READ and WRITE would never reach the daemon; without it every request
# does, as for an encrypting daemon (../shared/FUSE-NOTES.md measured the
# same way).
build_loopback() {
	local src=$WORK/loopback-src
	mkdir -p "$src"
	cp "$REPO/go.sum" "$src/"
	cat >"$src/go.mod" <<EOF
module encryptfs-bench/loopback

go $(cd "$REPO" && go list -m -f '{{.GoVersion}}')

require (
	github.com/hanwen/go-fuse/v2 $(gofuse_version)
	golang.org/x/sys $(cd "$REPO" && go list -m -f '{{.Version}}' golang.org/x/sys)
)
EOF
	cat >"$src/main.go" <<'EOF'
// Command loopback is go-fuse's example/loopback with kernel passthrough
// off, so that every READ and WRITE reaches the daemon.
package main

import (
	"log"
	"os"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

func main() {
	if len(os.Args) != 3 {
		log.Fatalf("usage: %s MOUNTPOINT ORIGINAL", os.Args[0])
	}
	root, err := fs.NewLoopbackRoot(os.Args[2])
	if err != nil {
		log.Fatal(err)
	}
	sec := time.Second // the example's timeouts, libfuse's defaults
	server, err := fs.Mount(os.Args[1], root, &fs.Options{
		AttrTimeout:     &sec,
		EntryTimeout:    &sec,
		NullPermissions: true,
		MountOptions: fuse.MountOptions{
			FsName:               os.Args[2],
			Name:                 "loopback",
			DisabledCapabilities: fuse.CAP_PASSTHROUGH,
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	server.Wait()
}
EOF
	(cd "$src" && GOFLAGS=-mod=mod GOPROXY=off GOSUMDB=off GOTOOLCHAIN=local go build -o "$WORK/loopback" .)
}
for col in "${COLUMNS[@]}"; do
	case $col in
	tmpfs) RUN+=("$col") ;;
	encryptfs-*classic) RUN+=("$col") ;;
	encryptfs-*uring)
		if uring_ready; then RUN+=("$col"); else skip "$col" "$URING_NOTE"; fi
		;;
	loopback)
		if ! need go golang-go; then
			skip loopback "go is missing: cannot build the go-fuse loopback"
			continue
		fi
		note "building the go-fuse loopback (go-fuse $(gofuse_version), kernel passthrough off)"
		if build_loopback >"$WORK/logs/loopback-build.log" 2>&1; then
			LOOPBACK_BIN=$WORK/loopback
			RUN+=("$col")
		else
			skip loopback "go build of the go-fuse loopback failed: $(tail -n 2 "$WORK/logs/loopback-build.log" | tr '\n' ' ')"
		fi
		;;
	gocryptfs | securefs | encfs | cryfs)
		if need "$col" "$col"; then RUN+=("$col"); else skip "$col" "not installed and apt-get install $col failed"; fi
		;;
	esac
done
[ "${#RUN[@]}" -gt 0 ] || die "no column can run"

version_of() {
	case $1 in
	tmpfs) uname -r ;;
	loopback) echo "go-fuse $(gofuse_version) example/loopback, passthrough off" ;;
	encryptfs-b-*) echo "${B_NAME:-$ENCRYPTFS_B_BIN}" ;;
	encryptfs-*) echo "$COMMIT" ;;
	gocryptfs) gocryptfs -version 2>/dev/null | head -n 1 | cut -d';' -f1 ;;
	securefs | encfs | cryfs) dpkg-query -W -f='${Version}' "$1" 2>/dev/null || echo "?" ;;
	esac
}

# ---- the workload, prepared outside the timing ----

if [ "$QUICK" = 1 ]; then
	TREE=tree
	note "quick workload: this repository's files"
	mkdir "$WORK/ref/$TREE"
	if git -C "$REPO" rev-parse HEAD >/dev/null 2>&1; then
		git -C "$REPO" archive HEAD | tar -x -C "$WORK/ref/$TREE"
	else
		tar -C "$REPO" --exclude=.git -cf - . | tar -x -C "$WORK/ref/$TREE"
	fi
	WORKLOAD="this repository's files (--quick)"
else
	TREE=linux-source-6.1
	note "preparing the workload: $TARBALL without drivers/ and Documentation/"
	xz -dc -T0 "$TARBALL" | tar -x -C "$WORK/ref" \
		--exclude="$TREE/drivers" --exclude="$TREE/Documentation"
	WORKLOAD="$(basename "$TARBALL") without drivers/ and Documentation/"
fi
tar -C "$WORK/ref" -cf "$WORK/tree.tar" "$TREE"
(cd "$WORK/ref/$TREE" && find . -type f -print0 | sort -z | xargs -0 md5sum) >"$WORK/ref.md5"
NFILES=$(wc -l <"$WORK/ref.md5")
NENTRIES=$(find "$WORK/ref/$TREE" | wc -l)
TARMIB=$(du -m "$WORK/tree.tar" | cut -f1)
note "workload: $NFILES files ($NENTRIES entries), tar $TARMIB MiB"

# Fault in the tmpfs's memory once (a fresh VM page costs a hypervisor
# fault on first touch), so that the first column does not pay for it.
note "warming up the tmpfs memory"
dd if=/dev/zero of="$WORK/warm" bs=1M count="$((WRITE_COUNT * 3 / 8))" status=none
rm -f "$WORK/warm"

# ---- init, mount, unmount ----

# fs_init COL CIPHER: make an empty filesystem (a plain dir for tmpfs and
# loopback).
fs_init() {
	local col=$1 cipher=$2
	mkdir -p "$cipher" || return 1
	case $col in
	encryptfs-v1-*) "$ENCRYPTFS_BIN" init --format 1 --passfile "$WORK/passfile" --kdf-memory 8 --kdf-time 1 "$cipher" ;;
	encryptfs-*) "$(bin_of "$col")" init --passfile "$WORK/passfile" --kdf-memory 8 --kdf-time 1 "$cipher" ;;
	gocryptfs) gocryptfs -init -q -scryptn 10 -passfile "$WORK/passfile" "$cipher" ;;
	securefs) securefs create --pass "$PASSWORD" --rounds 1 "$cipher" ;;
	*) return 0 ;; # encfs and cryfs create on first mount
	esac
}

# fs_mount COL CIPHER MNT LOG: start the daemon in the foreground as our
# child (we know its PID and wait for it after unmounting), logging to LOG,
# and wait until it has mounted. It runs in the main shell (it records the
# mount point and PID for the cleanup trap), so it checks every status
# itself instead of relying on set -e.
fs_mount() {
	local col=$1 cipher=$2 mnt=$3 log=$4 i want
	[ "$col" = tmpfs ] && return 0
	mkdir -p "$mnt" || return 1
	contains "$mnt" "${MOUNTS[@]}" || MOUNTS+=("$mnt")
	case $col in
	encryptfs-d-*)
		# Daemonized: the command returns once mounted, and the daemon
		# is its child that lives on (found below by its command line).
		"$ENCRYPTFS_BIN" mount --transport "${col##*-}" --passfile "$WORK/passfile" "$cipher" "$mnt" >>"$log" 2>&1 ||
			{ echo "$col: mount failed: $(tail -n 3 "$log" | tr '\n' ' ')" >&2; return 1; }
		PID_OF[$mnt]=$(daemon_of "$ENCRYPTFS_BIN" "$mnt") ||
			{ echo "$col: no daemon process found for $mnt" >&2; return 1; }
		;;
	encryptfs-*)
		"$(bin_of "$col")" mount -f --transport "${col##*-}" --passfile "$WORK/passfile" "$cipher" "$mnt" >>"$log" 2>&1 &
		;;
	loopback) "$LOOPBACK_BIN" "$mnt" "$cipher" >>"$log" 2>&1 & ;;
	gocryptfs) gocryptfs -f -q -passfile "$WORK/passfile" "$cipher" "$mnt" >>"$log" 2>&1 & ;;
	securefs) securefs mount --pass "$PASSWORD" "$cipher" "$mnt" >>"$log" 2>&1 & ;;
	encfs) encfs -f --standard --stdinpass "$cipher" "$mnt" <"$WORK/passfile" >>"$log" 2>&1 & ;;
	cryfs)
		HOME=$WORK/home CRYFS_FRONTEND=noninteractive CRYFS_NO_UPDATE_CHECK=true \
			cryfs -f "$cipher" "$mnt" <"$WORK/passfile" >>"$log" 2>&1 &
		;;
	esac
	[[ $col == encryptfs-d-* ]] || PID_OF[$mnt]=$!
	# Up to 2 minutes: cryfs's scrypt takes 20 s on a busy machine.
	for i in $(seq 1200); do
		is_mounted "$mnt" && break
		if ! kill -0 "${PID_OF[$mnt]}" 2>/dev/null; then
			echo "$col exited before mounting: $(tail -n 3 "$log" | tr '\n' ' ')" >&2
			return 1
		fi
		sleep 0.1
	done
	is_mounted "$mnt" || { echo "$col did not mount at $mnt" >&2; return 1; }
	# encryptfs says which transport serves; a silent fallback would
	# measure the wrong thing.
	case $col in
	encryptfs-*classic) want="transport: classic" ;;
	encryptfs-*uring) want="transport: io_uring" ;;
	*) return 0 ;;
	esac
	for i in $(seq 50); do
		grep -q "$want" "$log" && return 0
		sleep 0.1
	done
	# A daemonized mount logs to syslog; its /proc/mounts entry says the
	# transport nowhere, so trust the flag there.
	[[ $col == encryptfs-d-* ]] && return 0
	echo "$col: the mount log does not say '$want': $(tail -n 3 "$log" | tr '\n' ' ')" >&2
	return 1
}

# daemon_of BIN MNT: the PID of the running BIN whose command line ends
# with MNT (the daemonized mount we just started; there is one).
daemon_of() {
	local bin=$1 mnt=$2 p args
	for p in /proc/[0-9]*; do
		[ "$(readlink "$p/exe" 2>/dev/null)" = "$(readlink -f "$bin")" ] || continue
		args=$(tr '\0' ' ' <"$p/cmdline" 2>/dev/null) || continue
		[[ $args == *" $mnt " ]] && { echo "${p#/proc/}"; return 0; }
	done
	return 1
}

# fs_unmount COL MNT: unmount and wait for the daemon to exit.
fs_unmount() {
	[ "$1" = tmpfs ] && return 0
	unmount_one "$2"
	! is_mounted "$2"
}

# fs_teardown COL CIPHER MNT: unmount and delete everything.
fs_teardown() {
	local col=$1 cipher=$2 mnt=$3
	[ "$col" = tmpfs ] || unmount_one "$mnt"
	if is_mounted "$mnt"; then
		echo "$mnt is still mounted" >&2
		return 1
	fi
	rm -rf "$cipher" "$mnt" 2>/dev/null || { sleep 2 && rm -rf "$cipher" "$mnt"; }
	# cryfs remembers the filesystem ID per base dir under $HOME.
	if [ "$col" = cryfs ]; then
		rm -rf "${WORK:?}/home" && mkdir "$WORK/home"
	fi
}

# ---- measuring ----

echo "round,column,metric,value" >"$CSV"
record() { printf '%s,%s,%s,%s\n' "$1" "$2" "$3" "$4" >>"$CSV"; }

now() { echo "$EPOCHREALTIME"; }
elapsed() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.3f", b - a }'; }
mibps() { awk -v bytes="$1" -v t="$2" 'BEGIN { printf "%.1f", bytes / 1048576 / t }'; }
drop_caches() { sync; echo 3 >/proc/sys/vm/drop_caches; }

# cipher_bytes DIR: total size of the regular files under DIR.
cipher_bytes() { find "$1" -type f -printf '%s\n' | awk '{ s += $1 } END { printf "%d", s }'; }

# timed_dd ROUND COL METRIC BYTES dd-args...: run dd, record MiB/s.
timed_dd() {
	local round=$1 col=$2 metric=$3 bytes=$4 t
	shift 4
	t=$(now)
	dd status=none "$@"
	record "$round" "$col" "$metric" "$(mibps "$bytes" "$(elapsed "$t")")"
}

FIO_BLOCKS=(4k 128k 1m)
FIO_RWS=(write read randwrite randread)

# run_fio ROUND COL MNT: one fio run of 12 jobs one after another on one
# file: for each block size a sequential write (which also lays the file
# out), a sequential read, a random write and a random read. invalidate=1
# drops the file's page cache before each job; end_fsync=1 makes the
# writes count until they are on the backing store.
run_fio() {
	local round=$1 col=$2 mnt=$3 bs rw job=$WORK/fio.job
	{
		printf '[global]\nioengine=psync\nsize=%s\ninvalidate=1\nend_fsync=1\nfilename=%s\n' "$FIO_SIZE" "$mnt/fio.dat"
		for bs in "${FIO_BLOCKS[@]}"; do
			for rw in "${FIO_RWS[@]}"; do
				printf '[%s-%s]\nstonewall\nrw=%s\nbs=%s\n' "$rw" "$bs" "$rw" "$bs"
			done
		done
	} >"$job"
	fio --output-format=json --output="$WORK/fio.json" "$job" >/dev/null
	python3 - "$WORK/fio.json" <<'EOF' | while read -r name value; do record "$round" "$col" "fio_${name}_MiBps" "$value"; done
import json, sys
for job in json.load(open(sys.argv[1]))["jobs"]:
    rw = job["job options"]["rw"]
    side = job["read"] if "read" in rw else job["write"]
    print(job["jobname"], "%.1f" % (side["bw_bytes"] / 1048576))
EOF
	rm -f "$mnt/fio.dat"
}

# DAEMON: the PID of the column's daemon while its suite runs ("" for
# tmpfs); the memory rows read its /proc/PID/status.
DAEMON=""

# rss_status FIELD: the daemon's FIELD (VmRSS, VmHWM) in MiB, or nothing.
rss_status() {
	[ -n "$DAEMON" ] || return 0
	awk -v f="$1:" '$1 == f { printf "%.1f", $2 / 1024 }' "/proc/$DAEMON/status" 2>/dev/null || true
}

# cpu_ticks: the daemon's CPU time so far (user + system, every thread),
# in clock ticks, or nothing.
cpu_ticks() {
	[ -n "$DAEMON" ] || return 0
	# Fields 14 and 15 of /proc/PID/stat; the name (field 2) has no spaces here.
	awk '{ print $14 + $15 }' "/proc/$DAEMON/stat" 2>/dev/null || true
}

# rss_reset: start a new peak (Linux's clear_refs 5 resets VmHWM to VmRSS).
rss_reset() {
	[ -n "$DAEMON" ] || return 0
	echo 5 >"/proc/$DAEMON/clear_refs" 2>/dev/null || true
}

# rss_peak ROUND COL METRIC: record the daemon's peak RSS since the last
# rss_reset as rss_METRIC_MiB, and start a new peak.
rss_peak() {
	local v
	v=$(rss_status VmHWM)
	[ -z "$v" ] || record "$1" "$2" "rss_$3_MiB" "$v"
	rss_reset
}

# run_stream ROUND COL MNT WRITE_METRIC: the streaming rows. WRITE is
# recorded as WRITE_METRIC, which says whether it ran first or after the
# small-file rows.
run_stream() {
	local round=$1 col=$2 mnt=$3 write_metric=$4

	local c0 c1
	drop_caches
	rss_reset
	c0=$(cpu_ticks)
	timed_dd "$round" "$col" "$write_metric" "$((WRITE_COUNT * 131072))" \
		if=/dev/zero of="$mnt/zero" bs=128k count="$WRITE_COUNT" conv=fsync
	c1=$(cpu_ticks)
	# The daemon's CPU seconds for the write: if a slower WRITE costs the
	# daemon no more CPU, the time went elsewhere (the kernel, the
	# backing store).
	[ -z "$c0" ] || record "$round" "$col" "cpu_${write_metric%_MiBps}_s" "$(awk -v a="$c0" -v b="$c1" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.2f", (b - a) / hz }')"
	rss_peak "$round" "$col" write
	dd if="$mnt/zero" iflag=nocache count=0 status=none # drop this file's pages
	timed_dd "$round" "$col" read_MiBps "$((WRITE_COUNT * 131072))" if="$mnt/zero" of=/dev/null bs=128k
	drop_caches
	timed_dd "$round" "$col" read_cold_MiBps "$((WRITE_COUNT * 131072))" if="$mnt/zero" of=/dev/null bs=128k
	rss_peak "$round" "$col" read
	rm -f "$mnt/zero"

	timed_dd "$round" "$col" stream_write_MiBps "$((STREAM_COUNT * 4096))" \
		if=/dev/zero of="$mnt/stream" bs=4k count="$STREAM_COUNT" conv=fsync
	rm -f "$mnt/stream"
	timed_dd "$round" "$col" urandom_MiBps "$((URANDOM_COUNT * 4096))" \
		if=/dev/urandom of="$mnt/random" bs=4k count="$URANDOM_COUNT" conv=fsync
	rm -f "$mnt/random"
	rss_peak "$round" "$col" stream
}

# run_suite ROUND COL CIPHER MNT: every row but the sizes, for one column:
# in odd rounds the streaming rows first, in even rounds after the
# small-file rows (a large write after 38k small files is a case of its
# own: the issue of WRITE after the small-file rows).
run_suite() {
	local round=$1 col=$2 cipher=$3 mnt=$4 rss
	rss=$(rss_status VmRSS)
	[ -z "$rss" ] || record "$round" "$col" rss_idle_MiB "$rss"
	if ((round % 2 == 1)); then
		run_stream "$round" "$col" "$mnt" write_MiBps
		run_smallfiles "$round" "$col" "$cipher" "$mnt"
	else
		run_smallfiles "$round" "$col" "$cipher" "$mnt"
		run_stream "$round" "$col" "$mnt" write_late_MiBps
	fi
	if [ "$FIO" = 1 ]; then
		rss_reset
		run_fio "$round" "$col" "$mnt"
		rss_peak "$round" "$col" fio
	fi
}

# run_smallfiles ROUND COL CIPHER MNT: the rows on the kernel tree.
run_smallfiles() {
	local round=$1 col=$2 cipher=$3 mnt=$4 t n

	drop_caches
	rss_reset
	t=$(now)
	tar -xf "$WORK/tree.tar" -C "$mnt"
	record "$round" "$col" untar_s "$(elapsed "$t")"
	rss_peak "$round" "$col" untar

	t=$(now)
	(cd "$mnt/$TREE" && { md5sum -c --quiet "$WORK/ref.md5" >"$WORK/md5.out" 2>&1 || true; })
	record "$round" "$col" md5_s "$(elapsed "$t")"
	rss_peak "$round" "$col" md5
	n=$(wc -l <"$WORK/md5.out")
	record "$round" "$col" md5_bad "$n"
	[ "$n" = 0 ] || cp "$WORK/md5.out" "$WORK/logs/md5-$col-r$round.txt"

	t=$(now)
	ls -lR "$mnt/$TREE" >/dev/null
	record "$round" "$col" ls_s "$(elapsed "$t")"
	rss_peak "$round" "$col" ls

	t=$(now)
	rsync -an --itemize-changes "$WORK/ref/$TREE/" "$mnt/$TREE/" >"$WORK/rsync.out"
	record "$round" "$col" rsync_s "$(elapsed "$t")"
	n=$(wc -l <"$WORK/rsync.out")
	record "$round" "$col" rsync_changed "$n"
	if [ "$n" != 0 ]; then
		note "$col: rsync reports $n changed entries, e.g.: $(head -n 3 "$WORK/rsync.out" | tr '\n' ' ')"
	fi
	rss_peak "$round" "$col" rsync

	t=$(now)
	du -s "$mnt/$TREE" >/dev/null
	record "$round" "$col" du_s "$(elapsed "$t")"
	rss_peak "$round" "$col" du
	# Format 2 records what changed in batches every 5 s: wait for one, so
	# that the sizes hold the records of the whole tree (format 1 waits
	# as long, so that RM starts on an idle daemon in both).
	case $col in
	encryptfs-*) sleep 6 ;;
	esac
	sync
	record "$round" "$col" du_MiB "$(du -sm "$cipher" | cut -f1)"
	record "$round" "$col" du_KiB "$(du -sk "$cipher" | cut -f1)"
	# encryptfs's freshness records: what format 2 adds beside the tree.
	if compgen -G "$cipher/encryptfs.manifests.*" >/dev/null; then
		record "$round" "$col" fresh_KiB "$(du -sck "$cipher"/encryptfs.manifests.* "$cipher"/encryptfs.epoch.* | tail -n 1 | cut -f1)"
	fi

	t=$(now)
	rm -rf "${mnt:?}/$TREE"
	record "$round" "$col" rm_s "$(elapsed "$t")"
	rss_peak "$round" "$col" rm
}

# measure_sizes ROUND COL CIPHER MNT LOG: ciphertext bytes of an empty, a
# 1-byte and a 1,000,000-byte file, as the growth of the ciphertext dir
# between unmounted states (every daemon has written out its caches then).
measure_sizes() {
	local round=$1 col=$2 cipher=$3 mnt=$4 log=$5 size before after
	fs_unmount "$col" "$mnt" || return 1
	for size in 0 1 1000000; do
		before=$(cipher_bytes "$cipher") || return 1
		fs_mount "$col" "$cipher" "$mnt" "$log" || return 1
		head -c "$size" /dev/zero >"$mnt/size-$size" || return 1
		fs_unmount "$col" "$mnt" || return 1
		after=$(cipher_bytes "$cipher") || return 1
		record "$round" "$col" "size_${size}_B" "$((after - before))"
	done
}

# ---- the rounds ----

# The units of the order: each encryptfs column with its twins (encryptfs-
# v1-, -d- and -b- on the same transport), which run one after the other,
# so that the ratio of a twin pair compares runs minutes apart at most;
# every other column is a unit of its own.
UNITS=()
declare -A UNIT_AT=()
for col in "${RUN[@]}"; do
	key=$col
	case $col in encryptfs-v1-* | encryptfs-d-* | encryptfs-b-*) key=encryptfs-${col##*-} ;; esac
	if [ -z "${UNIT_AT[$key]:-}" ]; then
		UNIT_AT[$key]=${#UNITS[@]}
		UNITS+=("$col")
	else
		u=${UNIT_AT[$key]}
		if [ "$col" = "$key" ]; then UNITS[u]="$col ${UNITS[u]}"; else UNITS[u]+=" $col"; fi
	fi
done

# round_order ROUND: the columns of a round, one a line. The units rotate
# by one each round, and even rounds run the whole order backwards. A
# fixed cyclic order (the rotation alone, until 2026-11-29) gave every
# column the same predecessor in all but one round, and what a column
# leaves behind (freed memory that the host takes back, the page cache
# it dropped) then weighed on the same next column every time: a bias no
# number of rounds averages out. Backwards in even rounds, each column
# follows one neighbour in odd rounds and the other in even ones, and
# each of a twin pair goes first in half of the rounds.
round_order() {
	local round=$1 n=${#UNITS[@]} i cols=()
	for ((i = 0; i < n; i++)); do
		# shellcheck disable=SC2206 # a unit is its columns, space-separated
		cols+=(${UNITS[(i + round - 1) % n]})
	done
	if ((round % 2 == 0)); then
		for ((i = ${#cols[@]} - 1; i >= 0; i--)); do echo "${cols[i]}"; done
	else
		printf '%s\n' "${cols[@]}"
	fi
}

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
STARTED=$(date -u '+%Y-%m-%d %H:%M UTC')
note "columns: ${RUN[*]}; rounds: $ROUNDS; load average $LOAD_BEFORE"
FAILED=()
for round in $(seq "$ROUNDS"); do
	mapfile -t order < <(round_order "$round")
	for col in "${order[@]}"; do
		note "round $round/$ROUNDS: $col"
		cipher=$WORK/$col-cipher
		mnt=$WORK/$col-mnt
		[ "$col" = tmpfs ] && mnt=$cipher
		log=$WORK/logs/$col-r$round.log     # the daemon's output
		setup=$WORK/logs/$col-r$round.setup # ours: init, mount, sizes
		if ! { fs_init "$col" "$cipher" && fs_mount "$col" "$cipher" "$mnt" "$log"; } >>"$setup" 2>&1; then
			FAILED+=("$col round $round: setup failed: $(tail -n 3 "$setup" | tr '\n' ' ')")
			note "${FAILED[-1]}"
			fs_teardown "$col" "$cipher" "$mnt" || true
			continue
		fi
		# A job of its own (set -m: its own process group) with its own
		# set -e, outside any condition, so that the first failing step
		# stops this column's suite; a signal interrupts the wait at once
		# and the cleanup stops the whole job before unmounting.
		DAEMON=${PID_OF[$mnt]:-}
		set -m
		(
			set -e
			run_suite "$round" "$col" "$cipher" "$mnt"
		) &
		SUITE_PID=$!
		set +m
		rc=0
		wait "$SUITE_PID" || rc=$?
		SUITE_PID=""
		if [ "$rc" != 0 ]; then
			FAILED+=("$col round $round: suite failed with status $rc (see messages above)")
			note "${FAILED[-1]}"
		elif ! measure_sizes "$round" "$col" "$cipher" "$mnt" "$log" >>"$setup" 2>&1; then
			FAILED+=("$col round $round: size measurement failed: $(tail -n 3 "$setup" | tr '\n' ' ')")
			note "${FAILED[-1]}"
		fi
		fs_teardown "$col" "$cipher" "$mnt"
	done
done
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

# ---- the report ----

META=$WORK/meta.txt
{
	echo "date=$STARTED"
	echo "commit=$COMMIT"
	echo "machine=$(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo)), Linux $(uname -r), load average $LOAD_BEFORE before and $LOAD_AFTER after"
	echo "workload=$NFILES files ($NENTRIES entries, $TARMIB MiB tar) of $WORKLOAD"
	echo "sizes=WRITE/READ $((WRITE_COUNT / 8)) MiB, STREAM $((STREAM_COUNT * 4 / 1024)) MiB, URANDOM $((URANDOM_COUNT * 4096)) bytes$([ "$FIO" = 1 ] && echo ", fio $FIO_SIZE per job")"
	echo "rounds=$ROUNDS"
	echo "columns=${RUN[*]}"
	for c in "${RUN[@]}"; do echo "version.$c=$(version_of "$c")"; done
	for s in "${SKIPPED[@]}"; do echo "skipped=$s"; done
	for s in "${FAILED[@]}"; do echo "failed=$s"; done
} >"$META"

rm -f "$BASE.svg"
python3 "$REPO/bench/compare_report.py" "$CSV" "$META" "$BASE.dat" >"$BASE.md"
if [ "$CHART" = 1 ] && [ -s "$BASE.dat" ]; then
	gnuplot -e "datafile='$BASE.dat'; outfile='$BASE.svg'; title='encryptfs / best peer, $DATE ($ROUNDS rounds, medians)'" \
		"$REPO/bench/compare_chart.gp" || note "gnuplot failed: no chart"
fi
rm -f "$BASE.dat"
cat "$BASE.md"
echo
echo "table: $BASE.md"
echo "raw per-round numbers: $CSV"
[ -f "$BASE.svg" ] && echo "chart: $BASE.svg"
[ "${#FAILED[@]}" = 0 ] || exit 1
