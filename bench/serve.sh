#!/usr/bin/env bash
# bench/serve.sh: the fastest way to reach an encrypted vault over WebDAV
# (issue 21), three servers side by side, interleaved, on a private tmpfs:
#
#   serve              encryptfs serve webdav on a vault (one process, no FUSE)
#   rclone-gocryptfs   rclone serve webdav over a gocryptfs mount (what
#                      gocryptfs users do today: two daemons, two caches)
#   rclone-encryptfs   rclone serve webdav over an encryptfs mount
#
# every one on 127.0.0.1, started afresh each round (the order rotates from
# round to round), with the same client over loopback: curl, one request at
# a time for the single requests, 4 at once (curl --parallel, one curl for
# the whole tree, connections reused) for the trees. rclone as the client
# would measure its own pacer (rclone 1.60's WebDAV backend spaces its
# calls 10 ms apart: a PUT tree of 2,600 files took 85 s on all three
# servers alike). Rows:
#
#   PUT 1 file    MiB/s  curl -T of one BIG_MIB (256) MiB file of random bytes
#   GET 1 file    MiB/s  curl of it, after drop_caches (no plaintext page
#                        cache of a FUSE mount helps)
#   PUT tree      s      MKCOL of its directories (in order, one at a time),
#                        then PUT of its files, 4 at once: Go's src/net and
#                        src/crypto and a directory many/ of 1000 files of
#                        1 KiB (about 2,600 files, 24 MB)
#   PROPFIND      ms     one PROPFIND Depth: 1 of many/ (1000 entries), the
#                        median of 10 in a row; checked: 1001 responses
#   GET tree      s      GET of every file, 4 at once, after drop_caches;
#                        checked: diff -r equal to the source
#   DELETE tree   s      one DELETE of the tree's collection (curl)
#   CPU           s      the server tree's CPU time (user+system) over the round
#   RSS idle      MiB    VmRSS of the server tree right after start
#   RSS peak      MiB    VmHWM (peak RSS) of the server tree at the round's end
#
# "The server tree" is the serve process for serve, and rclone plus the
# FUSE daemon (gocryptfs or encryptfs mount) for the others; its RSS is
# the sum of the processes' (for peak: the sum of each one's own peak).
#
# Output: a markdown table (median and min..max over the rounds; the last
# columns are serve's advantage over each other column, >1 when serve is
# better: faster, less CPU or less memory), and every round's raw figures,
# in bench/results/serve-<date>.{md,csv}, with the date, the commit, the
# versions and the load average before and after.
#
# Usage (as root): bench/serve.sh
# Environment: ROUNDS=3, BIG_MIB=256, ENCRYPTFS=/path/bin (default: go
#   build ./cmd/encryptfs here), RESULTS_DIR=bench/results.
# Installs rclone, gocryptfs and curl with apt-get when they are missing.
# The machine may be shared: compare the ratios of one run, never figures
# from different runs.
set -euo pipefail
export LC_ALL=C

REPO=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=${ROUNDS:-3}
BIG_MIB=${BIG_MIB:-256}
RESULTS_DIR=${RESULTS_DIR:-$REPO/bench/results}
COLUMNS=(serve rclone-gocryptfs rclone-encryptfs)
die() { echo "serve.sh: $*" >&2; exit 1; }
note() { echo "== $*" >&2; }
case $ROUNDS in '' | *[!0-9]* | 0) die "ROUNDS must be a positive integer, not '$ROUNDS'" ;; esac
case $BIG_MIB in '' | *[!0-9]* | 0) die "BIG_MIB must be a positive integer, not '$BIG_MIB'" ;; esac
[ "$(id -u)" = 0 ] || die "must run as root (tmpfs, FUSE mounts, drop_caches)"

for tool in rclone:rclone gocryptfs:gocryptfs curl:curl diff:diffutils fusermount3:fuse3 python3:python3-minimal; do
	if ! command -v "${tool%%:*}" >/dev/null 2>&1; then
		note "installing ${tool#*:} (apt-get)"
		apt-get update -qq >/dev/null 2>&1 || true
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${tool#*:}" >/dev/null 2>&1 ||
			die "${tool%%:*} is missing and apt-get install ${tool#*:} failed"
	fi
done

WORK=$(mktemp -d /tmp/encryptfs-servebench.XXXXXX)
mount -t tmpfs -o size=6g tmpfs "$WORK"
PIDS=() # the server tree of the running column: our children
stop_servers() {
	local p
	for m in "$WORK"/mnt-*; do
		mountpoint -q "$m" 2>/dev/null && { fusermount3 -u "$m" 2>/dev/null || umount "$m" || umount -l "$m"; }
	done
	for p in "${PIDS[@]}"; do
		kill "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	PIDS=()
}
cleanup() {
	stop_servers
	umount "$WORK" 2>/dev/null || umount -l "$WORK"
	rmdir "$WORK"
}
trap cleanup EXIT

if [ -n "${ENCRYPTFS:-}" ]; then
	BIN=$(realpath "$ENCRYPTFS")
else
	note "building encryptfs"
	(cd "$REPO" && go build -o "$WORK/encryptfs" ./cmd/encryptfs)
	BIN=$WORK/encryptfs
fi
COMMIT=$(git -C "$REPO" rev-parse --short HEAD)
[ -z "$(git -C "$REPO" status --porcelain --untracked-files=no)" ] || COMMIT="$COMMIT (with uncommitted changes)"
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)

# ---- the data and the vaults ----
echo "benchmark password" >"$WORK/pw"
head -c "$((BIG_MIB << 20))" /dev/urandom >"$WORK/big.bin"
mkdir -p "$WORK/src/many"
cp -r "$(go env GOROOT)/src/net" "$(go env GOROOT)/src/crypto" "$WORK/src/"
for i in $(seq 1000); do head -c 1024 /dev/urandom >"$WORK/src/many/f$i"; done
NFILES=$(find "$WORK/src" -type f | wc -l)
# The tree's requests as curl -K files: mkcol.conf (parents first),
# put.conf and get.conf (one file each); paths percent-encoded.
python3 - "$WORK" <<'EOF'
import os, sys, urllib.parse
work = sys.argv[1]
src = os.path.join(work, "src")
q = lambda rel: urllib.parse.quote("/tree/" + rel if rel else "/tree/")
esc = lambda p: p.replace("\\", "\\\\").replace('"', '\\"')
with open(os.path.join(work, "mkcol.conf"), "w") as m, open(os.path.join(work, "put.conf"), "w") as p, \
        open(os.path.join(work, "get.conf"), "w") as g:
    for d, dirs, files in os.walk(src):
        dirs.sort()
        rel = os.path.relpath(d, src)
        rel = "" if rel == "." else rel + "/"
        m.write('url = "@URL@%s"\noutput = "/dev/null"\n' % q(rel))
        for f in sorted(files):
            p.write('url = "@URL@%s"\nupload-file = "%s"\noutput = "/dev/null"\n' % (q(rel + f), esc(os.path.join(d, f))))
            g.write('url = "@URL@%s"\noutput = "%s"\n' % (q(rel + f), esc(os.path.join(work, "back", rel + f))))
EOF
SRC_MB=$(du -sm "$WORK/src" | cut -f1)
"$BIN" init --passfile "$WORK/pw" --kdf-memory 8 --kdf-time 1 "$WORK/cipher-serve" >/dev/null
"$BIN" init --passfile "$WORK/pw" --kdf-memory 8 --kdf-time 1 "$WORK/cipher-rclone-encryptfs" >/dev/null
mkdir "$WORK/cipher-rclone-gocryptfs" "$WORK/mnt-rclone-gocryptfs" "$WORK/mnt-rclone-encryptfs"
gocryptfs -q -init -scryptn 10 -passfile "$WORK/pw" "$WORK/cipher-rclone-gocryptfs"

# free_port: a TCP port of 127.0.0.1 that was free a moment ago.
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# wait_http URL: until the server answers (at most 20 s).
wait_http() {
	for _ in $(seq 200); do curl -s -o /dev/null "$1" && return; sleep 0.1; done
	die "no server at $1: $(cat "$WORK/log")"
}
# wait_mount MNT
wait_mount() {
	for _ in $(seq 200); do mountpoint -q "$1" && return; sleep 0.1; done
	die "$1 did not mount: $(cat "$WORK/log")"
}

# start COLUMN: start its server tree (PIDS), set URL.
start() {
	local port mnt
	port=$(free_port)
	URL=http://127.0.0.1:$port
	: >"$WORK/log"
	case $1 in
	serve)
		"$BIN" serve webdav --passfile "$WORK/pw" --state-dir "$WORK/state-serve" --listen "127.0.0.1:$port" "$WORK/cipher-serve" >/dev/null 2>>"$WORK/log" &
		PIDS=($!)
		;;
	rclone-gocryptfs | rclone-encryptfs)
		mnt=$WORK/mnt-$1
		if [ "$1" = rclone-gocryptfs ]; then
			gocryptfs -f -q -passfile "$WORK/pw" "$WORK/cipher-$1" "$mnt" >>"$WORK/log" 2>&1 &
		else
			"$BIN" mount -f --passfile "$WORK/pw" --state-dir "$WORK/state-mount" "$WORK/cipher-$1" "$mnt" >>"$WORK/log" 2>&1 &
		fi
		PIDS=($!)
		wait_mount "$mnt"
		rclone serve webdav --config /dev/null --addr "127.0.0.1:$port" "$mnt" >>"$WORK/log" 2>&1 &
		PIDS+=($!)
		;;
	esac
	wait_http "$URL/"
}

# sum_status FIELD: the sum of FIELD (VmRSS, VmHWM) over the server tree, in MiB.
sum_status() {
	local p
	for p in "${PIDS[@]}"; do awk -v f="$1:" '$1 == f {print $2}' "/proc/$p/status"; done |
		awk '{s += $1} END {printf "%.1f", s / 1024}'
}
# cpu_secs: the server tree's CPU seconds so far.
cpu_secs() {
	local p
	for p in "${PIDS[@]}"; do cat "/proc/$p/stat"; done |
		awk -v hz="$(getconf CLK_TCK)" '{s += $14 + $15} END {printf "%.2f", s / hz}'
}
now() { date +%s.%N; }
# elapsed T0: seconds since T0.
elapsed() { python3 -c "import sys, time; print('%.3f' % (time.time() - float(sys.argv[1])))" "$1"; }
drop_caches() { sync; echo 3 >/proc/sys/vm/drop_caches; }
record() { echo "$ROUND,$COL,$1,$2" >>"$WORK/results.csv"; }
# curl_codes CONFIG [ARGS...]: run curl on CONFIG (a curl -K file of the
# tree's requests, URLs relative to @URL@) and fail unless every answer is 2xx.
curl_codes() {
	local conf=$1 bad
	shift
	sed "s|@URL@|$URL|" "$conf" >"$WORK/curl.conf"
	curl -s -K "$WORK/curl.conf" -w '%{http_code}\n' "$@" >"$WORK/codes" || true
	bad=$(grep -cv '^2' "$WORK/codes" || true)
	[ "$bad" = 0 ] || die "$COL: $bad of $(wc -l <"$WORK/codes") requests of $conf failed: $(sort "$WORK/codes" | uniq -c | tr '\n' ' ')"
}

echo "round,column,row,value" >"$WORK/results.csv"
for ROUND in $(seq "$ROUNDS"); do
	n=${#COLUMNS[@]}
	for k in $(seq 0 $((n - 1))); do
		COL=${COLUMNS[$(((k + ROUND - 1) % n))]}
		start "$COL"
		record "RSS idle" "$(sum_status VmRSS)"
		c0=$(cpu_secs)

		t=$(now)
		code=$(curl -s -o /dev/null -w '%{http_code}' -T "$WORK/big.bin" "$URL/big.bin")
		s=$(elapsed "$t")
		case $code in 200 | 201 | 204) ;; *) die "$COL: PUT of big.bin: $code" ;; esac
		record "PUT 1 file" "$(python3 -c "print('%.1f' % ($BIG_MIB / $s))")"

		drop_caches
		t=$(now)
		got=$(curl -s -f -o /dev/null -w '%{size_download}' "$URL/big.bin")
		s=$(elapsed "$t")
		[ "$got" = "$((BIG_MIB << 20))" ] || die "$COL: GET of big.bin gave $got bytes"
		record "GET 1 file" "$(python3 -c "print('%.1f' % ($BIG_MIB / $s))")"

		t=$(now)
		curl_codes "$WORK/mkcol.conf" -X MKCOL
		curl_codes "$WORK/put.conf" --parallel --parallel-max 4 --no-progress-meter
		record "PUT tree" "$(elapsed "$t")"

		for _ in $(seq 10); do
			t=$(now)
			curl -s -f -X PROPFIND -H "Depth: 1" -o "$WORK/propfind.xml" "$URL/tree/many/"
			elapsed "$t"
		done >"$WORK/propfind.times"
		responses=$(grep -o '<[A-Za-z]*:\{0,1\}response>' "$WORK/propfind.xml" | wc -l)
		[ "$responses" = 1001 ] || die "$COL: PROPFIND of many/ gave $responses responses"
		record "PROPFIND" "$(sort -n "$WORK/propfind.times" | awk '{v[NR] = $1} END {printf "%.1f", 1000 * (v[5] + v[6]) / 2}')"

		drop_caches
		rm -rf "$WORK/back"
		t=$(now)
		curl_codes "$WORK/get.conf" --parallel --parallel-max 4 --no-progress-meter --create-dirs
		record "GET tree" "$(elapsed "$t")"
		diff -r "$WORK/src" "$WORK/back" >/dev/null || die "$COL: the tree came back different"

		t=$(now)
		code=$(curl -s -o /dev/null -w '%{http_code}' -X DELETE "$URL/tree/")
		record "DELETE tree" "$(elapsed "$t")"
		case $code in 200 | 204) ;; *) die "$COL: DELETE of the tree: $code" ;; esac
		curl -s -o /dev/null -X DELETE "$URL/big.bin"

		record "CPU" "$(python3 -c "print('%.2f' % ($(cpu_secs) - $c0))")"
		record "RSS peak" "$(sum_status VmHWM)"
		stop_servers
		rm -rf "$WORK/back"
	done
	note "round $ROUND done (load $(cut -d' ' -f1-3 /proc/loadavg))"
done
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

DATE=$(date -u +%Y-%m-%d)
mkdir -p "$RESULTS_DIR"
BASE=$RESULTS_DIR/serve-$DATE
cp "$WORK/results.csv" "$BASE.csv"
VERSIONS="encryptfs $("$BIN" version 2>/dev/null | head -1); $(rclone version 2>/dev/null | head -1); $(gocryptfs -version 2>/dev/null | head -1); $(curl --version | head -1 | cut -d' ' -f1-2); Linux $(uname -r)"
python3 - "$BASE.csv" "$ROUNDS" "$(date -u '+%Y-%m-%d %H:%M UTC')" "$COMMIT" "$VERSIONS" \
	"$LOAD_BEFORE" "$LOAD_AFTER" "$BIG_MIB" "$NFILES" "$SRC_MB" "$(nproc)" >"$BASE.md" <<'EOF'
import csv, statistics, sys
path, rounds, date, commit, versions, load0, load1, big, nfiles, srcmb, ncpu = sys.argv[1:]
cols = ["serve", "rclone-gocryptfs", "rclone-encryptfs"]
rows = [("PUT 1 file", "MiB/s", True), ("GET 1 file", "MiB/s", True),
        ("PUT tree", "s", False), ("PROPFIND", "ms", False), ("GET tree", "s", False),
        ("DELETE tree", "s", False), ("CPU", "s", False), ("RSS idle", "MiB", False),
        ("RSS peak", "MiB", False)]
vals = {}
for r in csv.DictReader(open(path)):
    vals.setdefault((r["row"], r["column"]), []).append(float(r["value"]))
def cell(v):
    return "%s (%s..%s)" % tuple(("%.3g" % x) for x in (statistics.median(v), min(v), max(v)))
print("# bench/serve.sh, %s\n" % date)
print("Commit %s; %s rounds, interleaved; %s cores, load average %s before, %s after"
      " (a shared machine: compare ratios within this run only)." % (commit, rounds, ncpu, load0, load1))
print("Versions: %s.\n" % versions)
print("One file of %s MiB; a tree of %s files (%s MB: Go's src/net and src/crypto and"
      " many/, 1000 files of 1 KiB). Client: curl (the trees: 4 requests at once). All on a private"
      " tmpfs, over 127.0.0.1.\n" % (big, nfiles, srcmb))
hdr = ["row", "unit"] + cols + ["serve vs rclone-gocryptfs", "serve vs rclone-encryptfs"]
print("| " + " | ".join(hdr) + " |")
print("|" + "---|" * len(hdr))
for row, unit, higher in rows:
    line = [row, unit]
    med = {}
    for c in cols:
        v = vals.get((row, c))
        line.append(cell(v) if v else "-")
        med[c] = statistics.median(v) if v else None
    for c in cols[1:]:
        a, b = med["serve"], med[c]
        if not a or not b:
            line.append("-")
            continue
        adv = a / b if higher else b / a
        line.append("%.2f%s" % (adv, "" if adv >= 1 else " (serve worse)"))
    print("| " + " | ".join(line) + " |")
print("\nMedian (min..max) over the rounds. The ratio columns are serve's advantage: above 1,"
      " serve is faster, uses less CPU or less memory. RSS of rclone-* is rclone's plus the FUSE"
      " daemon's (for the peak: the sum of each one's own VmHWM).")
EOF
cat "$BASE.md"
echo "wrote $BASE.md and $BASE.csv" >&2
