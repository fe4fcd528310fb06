#!/usr/bin/env bash
# bench/lint.sh: run shellcheck on every script under bench/ (it is
# installed with apt-get when missing and we are root), and parse the
# Python helpers (compare_report.py, pool.py). Exits non-zero on any finding.
set -euo pipefail
cd "$(dirname "$0")"
if ! command -v shellcheck >/dev/null 2>&1; then
	[ "$(id -u)" = 0 ] || { echo "lint.sh: shellcheck is missing (apt-get install shellcheck)" >&2; exit 1; }
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends shellcheck >/dev/null
fi
shellcheck ./*.sh
for py in compare_report.py pool.py; do python3 -c 'import ast, sys; ast.parse(open(sys.argv[1]).read(), sys.argv[1])' "$py"; done
echo "bench/lint.sh: clean"
