# shellcheck shell=bash
# Sourced (not run) by scripts/demo.sh and scripts/test.sh, from the
# repository root, so that each of them works on a fresh Debian 12 machine:
# installs what is missing and exports the environment they need.
#
#   - Debian packages: fuse3 (fusermount3, mount.fuse3), gcc and libc6-dev
#     (the race detector needs cgo), git, ca-certificates, attr and rsync
#     (the tests use setfattr and rsync), rclone and syncthing (the tests of
#     docs/where-to-keep-a-vault.md run them, on 127.0.0.1 only),
#     openssh-client (ssh-keygen makes the SSH keys of the key slot tests),
#     stress-ng (its fsize stressor runs against a mount: forwardfs),
#     litmus and davfs2 (the WebDAV suites and a davfs2 mount run against
#     serve webdav: internal/cli).
#   - Go: go.mod asks for a newer Go than Debian 12 ships. A Go of 1.21 or
#     newer (which can fetch the go.mod toolchain itself) is used if present,
#     /usr/local/go first; otherwise Debian's golang-go is installed from
#     bookworm-backports. GOTOOLCHAIN=auto then makes go download the go.mod
#     toolchain through the module proxy, once, into the module cache.
#
# Nothing is installed when nothing is missing, and nothing is printed then.

setup_as_root() {
	if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

setup_apt_install() {
	echo "== installing $* (apt)" >&2
	setup_as_root apt-get update -qq >&2
	setup_as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >&2
}

# setup_go_ok: a go command of version 1.21 or newer is on PATH.
setup_go_ok() {
	local v
	command -v go >/dev/null 2>&1 || return 1
	v=$(GOTOOLCHAIN=local go env GOVERSION 2>/dev/null) || return 1
	v=${v#go}
	[ "${v%%.*}" -gt 1 ] || { v=${v#1.}; [ "${v%%[!0-9]*}" -ge 21 ]; }
}

setup_main() {
	local p missing=() mirror
	for p in fuse3 gcc libc6-dev git ca-certificates attr rsync rclone syncthing openssh-client stress-ng litmus davfs2; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
	done
	if [ ${#missing[@]} -gt 0 ]; then
		setup_apt_install "${missing[@]}"
	fi
	if [ ! -e /dev/fuse ]; then
		echo "/dev/fuse is missing: FUSE cannot work on this machine (modprobe fuse?)" >&2
		return 1
	fi

	export PATH="/usr/local/go/bin:$PATH"
	if ! setup_go_ok; then
		# Backports from the mirror the machine already uses.
		mirror=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
		[ -n "$mirror" ] || mirror=$(awk '$1 == "deb" {print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
		[ -n "$mirror" ] || mirror=http://deb.debian.org/debian
		echo "deb $mirror bookworm-backports main" |
			setup_as_root tee /etc/apt/sources.list.d/bookworm-backports.list >/dev/null
		setup_apt_install -t bookworm-backports golang-go
		hash -r
		setup_go_ok || { echo "could not install Go 1.21 or newer" >&2; return 1; }
	fi
	# Debian's Go sets GOTOOLCHAIN=local in its go.env; the environment wins.
	export GOTOOLCHAIN=auto
	if ! go version >/dev/null 2>&1; then
		echo "go could not get the toolchain go.mod asks for (module proxy unreachable?)" >&2
		return 1
	fi
	PATH="$PATH:$(go env GOPATH)/bin"
	export PATH
}

setup_main
