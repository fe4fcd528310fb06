#!/usr/bin/env bash
# Runs every check: the README's demo (scripts/demo.sh), gofmt, go vet,
# staticcheck (when installable), and the tests with the race detector
# (but for the crash replays, see below). Packages that mount FUSE run one
# at a time.
# Fails if an encryptfs mount is left behind. On a fresh Debian 12 machine
# it first installs what is missing (scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

. scripts/setup.sh
go version

# The tests put their mounts under a private TMPDIR (t.TempDir), so that a
# mount left behind is found exactly, even on a machine where others mount.
test_tmp=$(mktemp -d /tmp/encryptfs-test.XXXXXX)
chmod 1777 "$test_tmp" # like /tmp: tests that act as another user must traverse it
mounts_under() { awk -v p="$1/" 'index($2, p) == 1 && $3 ~ /^fuse/ {print $2}' /proc/mounts; }
ci_mounts() { awk '$3 ~ /^fuse\.encryptfs/ {print $2}' /proc/mounts | sort; }
ci_before=$(ci_mounts)
# Never rm -rf through a live mount.
trap '[ -z "$(mounts_under "$test_tmp")" ] && rm -rf "$test_tmp"' EXIT

echo "== demo (scripts/demo.sh, the README's first command)"
# Early: it takes about 15 s, and a demo that fails on a clean clone is the
# first thing a newcomer meets. It cleans up after itself (its mount too).
if ! bash scripts/demo.sh; then
	echo "scripts/demo.sh failed" >&2
	exit 1
fi

echo "== gofmt"
unformatted=$(gofmt -l $(go list -f '{{.Dir}}' ./...))
if [ -n "$unformatted" ]; then
	echo "not gofmt'ed:" >&2
	echo "$unformatted" >&2
	exit 1
fi

echo "== go vet"
go vet ./...

echo "== staticcheck"
if ! command -v staticcheck >/dev/null 2>&1; then
	go install honnef.co/go/tools/cmd/staticcheck@latest >/dev/null 2>&1 ||
		echo "staticcheck could not be installed; skipped" >&2
fi
if command -v staticcheck >/dev/null 2>&1; then
	staticcheck ./...
fi

# A package is a FUSE package if it (or its tests) may mount: it depends on
# go-fuse or on the packages that mount, or runs the encryptfs binary.
all_pkgs=$(go list ./...)
fuse_pkgs=$(go list -f '{{.ImportPath}} {{join .Deps " "}} {{join .TestImports " "}} {{join .XTestImports " "}}' ./... |
	awk '/hanwen\/go-fuse|encryptfs\/internal\/(mount|forwardfs|reversefs|fstest)( |$|\/)|encryptfs\/internal\/cli( |$)/ {print $1}')
other_pkgs=$(comm -23 <(echo "$all_pkgs" | sort) <(echo "$fuse_pkgs" | sort))

status=0
export TMPDIR=$test_tmp
echo "== go test (non-FUSE packages)"
# internal/crashsim replays every crash state of sequential scenarios on
# one goroutine (its recorder's mutex aside): the race detector finds
# nothing there that the engine's and the upgrade's own tests under -race
# do not, and it made the package's 1.5 minutes 6.3 (on the 2-core CI
# machine), near its 8-minute timeout. It runs without it.
race_pkgs=$(echo "$other_pkgs" | grep -v '/internal/crashsim$' || true)
# shellcheck disable=SC2086
go test -race -count=1 -timeout 8m $race_pkgs || status=1
if echo "$other_pkgs" | grep -q '/internal/crashsim$'; then
	go test -count=1 -timeout 8m ./internal/crashsim || status=1
fi
if [ -n "$fuse_pkgs" ]; then
	echo "== go test (FUSE packages, one at a time, classic /dev/fuse transport)"
	# shellcheck disable=SC2086
	ENCRYPTFS_TRANSPORT=classic go test -race -count=1 -p 1 -timeout 12m $fuse_pkgs || status=1
fi

# The FUSE suites (posix, fsx, the operations) run once more on vaults with
# location binding and file roots (format 2, what `encryptfs init` makes):
# mounttest's vaults are format 1 unless ENCRYPTFS_TEST_ROOTS=1 (bound and
# roots) or ENCRYPTFS_TEST_BOUND=1 (bound only). Only forwardfs, whose
# suites are the broad ones (about 4 minutes with -race on 2 cores); the
# CLI tests make default vaults where they test a user's path.
echo "== go test (forwardfs again, format-2 vaults: binding and file roots, classic transport)"
ENCRYPTFS_TEST_ROOTS=1 ENCRYPTFS_TRANSPORT=classic go test -race -count=1 -p 1 -timeout 12m ./internal/forwardfs || status=1

# The freshness tests run once more with manifests one file per directory
# (the layout of a vault made before "ManifestBuckets" and not upgraded,
# which a mount still reads and writes); new vaults pack them in buckets.
echo "== go test (freshness again, manifests one file per directory)"
ENCRYPTFS_TEST_MANIFEST_FILES=1 ENCRYPTFS_TRANSPORT=classic go test -race -count=1 -p 1 -timeout 8m ./internal/fresh ./vault -run "Fresh|Crash|Mount|Planted|Batch|Renamed|Old|Strict|Second|Window|Failed" || status=1

# The packages whose tests mount forward vaults run a second time over FUSE
# over io_uring (mount --transport uring), which needs Linux 6.14+ and the
# fuse module parameter enable_uring, off by default: turned on here as
# root. The tests themselves fail under CI=true when it cannot be.
uring_param=/sys/module/fuse/parameters/enable_uring
# They are the packages whose test helpers mount with $ENCRYPTFS_TRANSPORT
# (the forward mount's suites: posix, fsx, the mount and CLI tests).
uring_pkgs="./internal/transport ./internal/forwardfs ./internal/mount ./internal/cli"
if [ -w "$uring_param" ] && [ "$(cat "$uring_param")" != Y ]; then
	echo Y >"$uring_param" || true
fi
if [ "$(cat "$uring_param" 2>/dev/null)" = Y ]; then
	echo "== go test (forward-mount packages again, io_uring transport)"
	# shellcheck disable=SC2086
	ENCRYPTFS_TRANSPORT=uring go test -race -count=1 -p 1 -timeout 12m $uring_pkgs || status=1
else
	echo "io_uring transport NOT tested: $uring_param is $(cat "$uring_param" 2>/dev/null || echo missing) and cannot be turned on (needs root and Linux 6.14+ with CONFIG_FUSE_IO_URING)" >&2
	if [ "${CI:-}" = true ]; then
		status=1
	fi
fi

echo "== soak (bench/soak.sh, 60 s)"
# 32 workers against one mount, every byte checked, the daemon's RSS, fds
# and goroutines watched for growth; the closing note of issue 10 has the
# figures of a 30-minute run.
bench/soak.sh 60 || status=1

echo "== leftover mounts"
left=$(mounts_under "$test_tmp")
# Mounts elsewhere may belong to other users of the machine: warn only.
others=$(comm -13 <(echo "$ci_before") <(ci_mounts) | sed '/^$/d' | grep -v "^$test_tmp/" || true)
if [ -n "$others" ]; then
	echo "note: encryptfs mounts that appeared outside the tests' TMPDIR during the run (not counted):" >&2
	echo "$others" >&2
fi
if [ -n "$left" ]; then
	echo "encryptfs mounts left behind by the tests:" >&2
	echo "$left" >&2
	while read -r m; do fusermount3 -uz "$m" 2>/dev/null || true; done <<<"$left"
	status=1
else
	echo "none"
fi

if [ "$status" -ne 0 ]; then
	echo "FAIL" >&2
	exit 1
fi
echo "PASS"
