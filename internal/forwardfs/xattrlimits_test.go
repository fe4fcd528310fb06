package forwardfs_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/encryptfs/encryptfs/internal/fsck"
	"github.com/encryptfs/encryptfs/internal/fstest/mounttest"
	"golang.org/x/sys/unix"
)

// listXattrs lists p's xattr names with a buffer as large as the kernel
// allows (64 KiB), as getfattr -d and cp -a do.
func listXattrs(p string) ([]string, error) {
	buf := make([]byte, 65536)
	n, err := unix.Listxattr(p, buf)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, a := range strings.Split(string(buf[:n]), "\x00") {
		if a != "" {
			out = append(out, a)
		}
	}
	return out, nil
}

// TestXattrListStaysListable (issue 10): on a backing store that takes any
// number of xattrs (XFS, btrfs; here a loopback that keeps them in
// memory), setxattr of 400 user attributes with 155-byte
// names (a plaintext list under 64 KiB) must not leave the file with a
// list listxattr cannot return (E2BIG): the attribute that would overflow
// the encrypted list is refused with ENOSPC, and everything accepted is
// listed and readable. Removing one makes room again.
func TestXattrListStaysListable(t *testing.T) {
	big := mounttest.ManyXattrDir(t)
	v := mounttest.NewVault(t, nil)
	must(t, v.Srv.Unmount())
	if out, err := exec.Command("cp", "-a", v.Cipher+"/.", big).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	v.Cipher = big
	v.MountAgain(t, nil)

	p := filepath.Join(v.Mnt, "f")
	must(t, os.WriteFile(p, []byte("data"), 0o644))
	name := func(i int) string { return fmt.Sprintf("user.%03d%s", i, strings.Repeat("n", 147)) } // 155 bytes
	accepted := map[string]bool{}
	var refused error
	for i := range 400 {
		err := unix.Setxattr(p, name(i), []byte{byte(i)}, 0)
		if err != nil {
			refused = err
			break
		}
		accepted[name(i)] = true
	}
	list, err := listXattrs(p)
	if err != nil {
		t.Fatalf("listxattr after %d accepted setxattrs: %v (getfattr -d, cp -a, tar --xattrs would fail)", len(accepted), err)
	}
	if !errors.Is(refused, syscall.ENOSPC) {
		t.Fatalf("setxattr #%d: %v, want ENOSPC", len(accepted), refused)
	}
	if len(list) != len(accepted) {
		t.Fatalf("listed %d xattrs, %d were accepted", len(list), len(accepted))
	}
	for _, a := range list {
		if !accepted[a] {
			t.Fatalf("listed %q, never set", a)
		}
	}
	if len(accepted) < 200 {
		t.Errorf("only %d xattrs accepted: the limit is too strict", len(accepted))
	}
	// Tools that copy xattrs work on the file.
	if out, err := exec.Command("cp", "-a", p, filepath.Join(v.Mnt, "copy")).CombinedOutput(); err != nil {
		t.Errorf("cp -a: %v %s", err, out)
	}
	// Room again after a removal; a replace of an existing name is never refused.
	must(t, unix.Removexattr(p, name(0)))
	must(t, unix.Setxattr(p, name(0), []byte("again"), 0))
	must(t, unix.Setxattr(p, name(1), []byte("replaced"), unix.XATTR_REPLACE))
	if _, err := listXattrs(p); err != nil {
		t.Fatalf("listxattr: %v", err)
	}
}

// TestNoXattrBacking (issue 11): a CIPHERDIR on a store without xattrs
// (here a loopback that fails every xattr call as an rclone mount does:
// EOPNOTSUPP on directories, EIO on files) mounts as a file system
// without xattrs: empty lists, EOPNOTSUPP on set and get, so cp -a and
// tar --xattrs work; the mount says so once; fsck calls the vault clean
// with one note instead of an I/O error per file.
func TestNoXattrBacking(t *testing.T) {
	view := mounttest.NoXattrDir(t)
	v := mounttest.NewVault(t, nil)
	must(t, os.MkdirAll(filepath.Join(v.Mnt, "d", "e"), 0o755))
	for i := range 5 {
		must(t, os.WriteFile(filepath.Join(v.Mnt, "d", fmt.Sprintf("f%d", i)), []byte(strings.Repeat("x", i*1000)), 0o644))
	}
	must(t, v.Srv.Unmount())
	if out, err := exec.Command("cp", "-r", v.Cipher+"/.", view).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	v.Cipher = view
	v.MountAgain(t, nil)

	for _, rel := range []string{".", "d", "d/e", "d/f0", "d/f3"} {
		p := filepath.Join(v.Mnt, rel)
		if list, err := listXattrs(p); err != nil || len(list) != 0 {
			t.Errorf("listxattr %s: %q, %v; want an empty list", rel, list, err)
		}
		if err := unix.Setxattr(p, "user.a", []byte("v"), 0); !errors.Is(err, syscall.EOPNOTSUPP) {
			t.Errorf("setxattr %s: %v, want EOPNOTSUPP", rel, err)
		}
		if _, err := unix.Getxattr(p, "user.a", make([]byte, 16)); !errors.Is(err, syscall.EOPNOTSUPP) {
			t.Errorf("getxattr %s: %v, want EOPNOTSUPP", rel, err)
		}
		if err := unix.Removexattr(p, "user.a"); !errors.Is(err, syscall.EOPNOTSUPP) {
			t.Errorf("removexattr %s: %v, want EOPNOTSUPP", rel, err)
		}
	}
	out := t.TempDir()
	if b, err := exec.Command("cp", "-a", filepath.Join(v.Mnt, "d"), out).CombinedOutput(); err != nil {
		t.Errorf("cp -a: %v %s", err, b)
	}
	if b, err := exec.Command("tar", "--xattrs", "-cf", filepath.Join(out, "t.tar"), "-C", v.Mnt, "d").CombinedOutput(); err != nil {
		t.Errorf("tar --xattrs: %v %s", err, b)
	}
	if n := strings.Count(v.Log.String(), "extended attributes are off"); n != 1 {
		t.Errorf("the mount said %d times that xattrs are off, want once; log:\n%s", n, v.Log.String())
	}

	rep, err := fsck.Check(context.Background(), v.Session(t), fsck.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Clean || len(rep.Notes) != 1 {
		t.Errorf("fsck on a store without xattrs: clean %v, %d problems, notes %q; want clean and one note",
			rep.Clean, len(rep.Problems), rep.Notes)
	}
	if rep.Summary.Files != 5 {
		t.Errorf("fsck checked %d files, want 5", rep.Summary.Files)
	}
}
