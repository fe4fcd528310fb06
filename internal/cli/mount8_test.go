package cli

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/encryptfs/encryptfs/internal/fstest"
)

// needRoot skips a test that needs root, except under CI=true (where it
// must run, so it fails instead).
func needRoot(t *testing.T) {
	t.Helper()
	fstest.RequireFUSE(t)
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true: this test needs root")
		}
		t.Skip("needs root")
	}
}

// mount8Script runs in a private mount namespace. mount(8) clears PATH for
// its helpers and mount.fuse3 runs "encryptfs" through /bin/sh, whose
// default PATH starts with /usr/local/sbin: the built binary's directory is
// bind-mounted there, visible to this namespace only. Every mount made here
// dies with the namespace; the trap unmounts lazily so that the daemon exits
// even when a step fails.
const mount8Script = `set -eu
mount --bind "$BIN_DIR" /usr/local/sbin
trap 'umount -l "$MNT" 2>/dev/null || true' EXIT
mounted() { awk -v m="$MNT" '$2 == m {print $1, $3, $4}' /proc/mounts; }

if mount -t fuse.encryptfs -o "passfile=$WRONG_PW" "$CIPHER" "$MNT" 2>/dev/null; then echo "wrong password mounted"; exit 1; fi
[ -z "$(mounted)" ] || { echo "mounted after a failed mount: $(mounted)"; exit 1; }

mount -t fuse.encryptfs -o "passfile=$PW,nofail,_netdev,x-systemd.automount,x-systemd.device-timeout=5s,comment=x,noexec" "$CIPHER" "$MNT"
echo "mount -t: $(mounted)"
echo "written through mount -t" >"$MNT/note"
umount "$MNT"
echo "after umount: $(mounted)"

mount -T "$FSTAB" "$MNT"
echo "mount -T: $(mounted)"
echo "read: $(cat "$MNT/note")"
umount "$MNT"
echo "after umount: $(mounted)"
`

// TestMountCommand mounts with the real mount(8), from the command line
// (-t fuse.encryptfs) and from an fstab line (mount -T FILE, so the real
// /etc/fstab is not touched), and unmounts with umount(8).
func TestMountCommand(t *testing.T) {
	needRoot(t)
	for _, tool := range []string{"unshare", "mount", "umount", "mount.fuse3"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
	}
	if fi, err := os.Stat("/usr/local/sbin"); err != nil || !fi.IsDir() {
		t.Fatalf("/usr/local/sbin is needed as a bind-mount target: %v", err)
	}
	dir, _ := newVault(t, "pw")
	mnt := t.TempDir()
	pw := writePassfile(t, "pw")
	fstab := filepath.Join(t.TempDir(), "fstab")
	line := dir + " " + mnt + " fuse.encryptfs passfile=" + pw + ",nofail,noauto,user,_netdev,x-systemd.automount 0 0\n"
	if err := os.WriteFile(fstab, []byte("# test fstab\n"+line), 0o644); err != nil {
		t.Fatal(err)
	}
	before := hashTree(t, dir)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "unshare", "--mount", "--propagation", "private", "sh", "-c", mount8Script)
	cmd.Env = append(os.Environ(), "BIN_DIR="+filepath.Dir(binary), "CIPHER="+dir, "MNT="+mnt,
		"PW="+pw, "WRONG_PW="+writePassfile(t, "wrong"), "FSTAB="+fstab)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	got := string(out)
	for _, want := range []string{
		"mount -t: " + dir + " fuse.encryptfs rw,noexec,",              // noexec passed on
		"mount -T: " + dir + " fuse.encryptfs rw,nosuid,nodev,noexec,", // "user" implies these
		"read: written through mount -t\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Count(got, "after umount: \n") != 2 {
		t.Errorf("umount(8) left the mount:\n%s", got)
	}
	if isMounted(t, mnt) {
		t.Error("mount visible outside the private namespace")
	}
	after := hashTree(t, dir)
	if len(after) != len(before)+1 {
		t.Errorf("expected exactly one new backing file, before %d entries, after %d", len(before), len(after))
	}
}
