#!/usr/bin/env bash
# bench/writeafter.sh BINARY (issue 22: is a large write slower after the
# small-file rows?). WRITE after the small-file rows: dd 1000 MiB (bs=128k conv=fsync) into a
# fresh encryptfs mount on tmpfs, (a) on a quiet tmpfs, (b) right after an
# untar + rm -rf of the kernel subset through another mount in the same
# tmpfs, (c) as (b) then drop_caches + compact_memory before the dd.
set -euo pipefail
BIN=$1 T=${TRANSPORT:-classic} ROUNDS=${ROUNDS:-3}
W=$(mktemp -d /tmp/wa.XXXX); mount -t tmpfs -o size=12g tmpfs "$W"
cleanup() { for m in "$W"/m*; do mountpoint -q "$m" && umount "$m"; done; umount "$W"; rmdir "$W"; }
trap cleanup EXIT
echo pw > "$W/pw"
[ -n "$(ls /tmp/wa-src 2>/dev/null)" ] || { mkdir -p /tmp/wa-src; tar -xJf /usr/src/linux-source-6.1.tar.xz -C /tmp/wa-src; }
mkdir "$W/ref"
TREE=$(ls /tmp/wa-src)
tar -C /tmp/wa-src -cf "$W/tree.tar" --exclude="$TREE/drivers" --exclude="$TREE/Documentation" "$TREE"
mnt() { mkdir -p "$W/c$1" "$W/m$1"; [ -e "$W/c$1/encryptfs.conf" ] || "$BIN" init --passfile "$W/pw" "$W/c$1" >/dev/null 2>&1
  "$BIN" mount -f --passfile "$W/pw" --transport "$T" "$W/c$1" "$W/m$1" 2>/dev/null & PID=$!
  for _ in $(seq 100); do mountpoint -q "$W/m$1" && return; sleep 0.1; done; echo "no mount"; exit 1; }
unm() { umount "$W/m$1"; wait $PID || true; }
dd1() { rm -f "$W/m$1/f"; dd if=/dev/zero of="$W/m$1/f" bs=128k count=8000 conv=fsync 2>&1 | awk '/copied/ {print $(NF-1), $NF}'; rm -f "$W/m$1/f"; }
smallrows() { mnt s; tar -C "$W/ms" -xf "$W/tree.tar"; find "$W/ms" -type f -print0 | head -z -n 2000 | xargs -0 md5sum >/dev/null; ls -lR "$W/ms" >/dev/null; du -s "$W/ms" >/dev/null; rm -rf "$W/ms/$TREE"; unm s; rm -rf "$W/cs"; }
for r in $(seq "$ROUNDS"); do
  echo 3 > /proc/sys/vm/drop_caches
  mnt a; echo "round $r (a) quiet:          $(dd1 a)"; unm a
  smallrows
  mnt a; echo "round $r (b) after untar+rm: $(dd1 a)"; unm a
  smallrows
  echo 3 > /proc/sys/vm/drop_caches; echo 1 > /proc/sys/vm/compact_memory
  mnt a; echo "round $r (c) +drop+compact:  $(dd1 a)"; unm a
  grep -E "^(MemFree|Cached|Shmem|AnonHugePages):" /proc/meminfo | tr '\n' ' '; echo
done
