package posix

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"testing"

	"golang.org/x/sys/unix"
)

// otherCheck is one operation made as the other user and its expected errno.
type otherCheck struct {
	what string
	op   childOp
	want unix.Errno // 0: must succeed
}

// RunAsOtherUser checks permission enforcement against a second user: root
// (the caller must be root) builds fixtures in a fresh subdirectory of dir,
// then a child process (this test binary re-executed, which drops to uid and
// gid 65534 before doing anything) makes the calls and reports errnos.
//
// Every ancestor of dir must be searchable by uid 65534 (o+x), and a FUSE
// mount must use allow_other (and should use default_permissions), or the
// child sees EACCES for everything: the first check tells which.
func RunAsOtherUser(t *testing.T, dir string) { RunAsOtherUserWithOptions(t, dir, Options{}) }

// RunAsOtherUserWithOptions is RunAsOtherUser with feature exemptions.
func RunAsOtherUserWithOptions(t *testing.T, dir string, opts Options) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipped: RunAsOtherUser needs root to set up a second user")
	}
	old := unix.Umask(0)
	t.Cleanup(func() { unix.Umask(old) })
	e := newEnv(t, dir, opts)

	// Reachability first, so a missing o+x or allow_other gives one clear error.
	if got := runAsOther(t, []childOp{{Op: "stat", Path: e.dir}}); got[0] != 0 {
		t.Fatalf("uid %d cannot stat %s: %v; make every ancestor o+x and mount FUSE with allow_other", otherID, e.dir, unix.Errno(got[0]))
	}

	mkfile(t, e.p("r600"), 0o600, []byte("secret"))
	mkfile(t, e.p("r644"), 0o644, []byte("readable"))
	mkfile(t, e.p("r666"), 0o666, []byte("writable"))
	mkfile(t, e.p("suid"), 0o4777, []byte("#!/bin/sh\n"))
	mkdir(t, e.p("rdir"), 0o755)
	mkfile(t, e.p("rdir", "victim"), 0o666, nil)
	mkdir(t, e.p("rdir", "sub"), 0o777)
	mkdir(t, e.p("open"), 0o777)
	mkdir(t, e.p("sticky"), 0o1777)
	mkfile(t, e.p("sticky", "rootfile"), 0o666, nil)
	mkdir(t, e.p("xonly"), 0o711)
	mkfile(t, e.p("xonly", "known"), 0o644, []byte("known"))
	mkdir(t, e.p("noexec"), 0o644)
	mkfile(t, e.p("noexec", "f"), 0o644, nil)

	checks := []otherCheck{
		{"read a 0600 root file", childOp{Op: "open", Path: e.p("r600"), Flags: unix.O_RDONLY}, unix.EACCES},
		{"read a 0644 root file", childOp{Op: "open", Path: e.p("r644"), Flags: unix.O_RDONLY}, 0},
		{"open a 0644 root file for writing", childOp{Op: "open", Path: e.p("r644"), Flags: unix.O_WRONLY}, unix.EACCES},
		{"truncate a 0644 root file", childOp{Op: "truncate", Path: e.p("r644")}, unix.EACCES},
		{"write a 0666 root file", childOp{Op: "write", Path: e.p("r666")}, 0},
		{"write a 04777 root file", childOp{Op: "write", Path: e.p("suid")}, 0},
		{"create in a 0755 root dir", childOp{Op: "open", Path: e.p("rdir", "new"), Flags: unix.O_CREAT | unix.O_WRONLY, Mode: 0o644}, unix.EACCES},
		{"mkdir in a 0755 root dir", childOp{Op: "mkdir", Path: e.p("rdir", "newdir"), Mode: 0o755}, unix.EACCES},
		{"unlink in a 0755 root dir", childOp{Op: "unlink", Path: e.p("rdir", "victim")}, unix.EACCES},
		{"rmdir in a 0755 root dir", childOp{Op: "rmdir", Path: e.p("rdir", "sub")}, unix.EACCES},
		{"rename out of a 0755 root dir", childOp{Op: "rename", Path: e.p("rdir", "victim"), Path2: e.p("open", "stolen")}, unix.EACCES},
		{"chmod a root file", childOp{Op: "chmod", Path: e.p("r666"), Mode: 0o777}, unix.EPERM},
		{"chown a root file", childOp{Op: "chown", Path: e.p("r666"), ID: otherID}, unix.EPERM},
		{"set explicit times on a 0666 root file", childOp{Op: "utimes", Path: e.p("r666")}, unix.EPERM},
		{"set times to now on a 0666 root file", childOp{Op: "utimesnow", Path: e.p("r666")}, 0},
		{"set times to now on a 0644 root file", childOp{Op: "utimesnow", Path: e.p("r644")}, unix.EACCES},
		{"list a 0711 dir", childOp{Op: "readdir", Path: e.p("xonly")}, unix.EACCES},
		{"open a known name in a 0711 dir", childOp{Op: "open", Path: e.p("xonly", "known"), Flags: unix.O_RDONLY}, 0},
		{"stat in a 0644 dir", childOp{Op: "stat", Path: e.p("noexec", "f")}, unix.EACCES},
		{"create in a 0777 dir", childOp{Op: "open", Path: e.p("open", "mine"), Flags: unix.O_CREAT | unix.O_WRONLY, Mode: 0o640}, 0},
		{"chmod own file", childOp{Op: "chmod", Path: e.p("open", "mine"), Mode: 0o600}, 0},
		{"give own file to root", childOp{Op: "chown", Path: e.p("open", "mine"), ID: 0}, unix.EPERM},
		{"mkdir in a 0777 dir", childOp{Op: "mkdir", Path: e.p("open", "mydir"), Mode: 0o750}, 0},
		{"symlink in a 0777 dir", childOp{Op: "symlink", Path: e.p("open", "mylink"), Path2: "target"}, 0},
		{"unlink root's file in a sticky dir", childOp{Op: "unlink", Path: e.p("sticky", "rootfile")}, unix.EPERM},
		{"rename root's file in a sticky dir", childOp{Op: "rename", Path: e.p("sticky", "rootfile"), Path2: e.p("sticky", "moved")}, unix.EPERM},
		{"create in a sticky dir", childOp{Op: "open", Path: e.p("sticky", "mine"), Flags: unix.O_CREAT | unix.O_WRONLY, Mode: 0o644}, 0},
		{"unlink own file in a sticky dir", childOp{Op: "unlink", Path: e.p("sticky", "mine")}, 0},
	}
	ops := make([]childOp, len(checks))
	for i, c := range checks {
		ops[i] = c.op
	}
	got := runAsOther(t, ops)
	for i, c := range checks {
		if unix.Errno(got[i]) != c.want {
			t.Errorf("as uid %d, %s: got %v (%d), want %v (%d)", otherID, c.what, unix.Errno(got[i]), got[i], c.want, int(c.want))
		}
	}

	// What the other user made is theirs, with the modes asked for.
	for _, o := range []struct {
		path string
		typ  uint32
		perm uint32
	}{
		{e.p("open", "mine"), unix.S_IFREG, 0o600},
		{e.p("open", "mydir"), unix.S_IFDIR, 0o750},
		{e.p("open", "mylink"), unix.S_IFLNK, 0o777},
	} {
		st := lstat(t, o.path)
		if st.Uid != otherID || st.Gid != otherID {
			t.Errorf("%s made by uid %d: owner %d:%d", o.path, otherID, st.Uid, st.Gid)
		}
		wantMode(t, o.path, o.typ, o.perm)
	}
	if got := readFile(t, e.p("r666")); string(got) != "written by the other user" {
		t.Errorf("0666 file written by the other user reads %q", got)
	}
	lstat(t, e.p("sticky", "rootfile"))
	lstat(t, e.p("rdir", "victim"))
	if !opts.NoKillSuidOnWrite {
		wantMode(t, e.p("suid"), unix.S_IFREG, 0o777)
	}
}

// runAsOther runs ops in a child process as uid/gid 65534 and returns one
// errno per op.
func runAsOther(t *testing.T, ops []childOp) []int {
	t.Helper()
	exe, err := os.Executable()
	ok(t, err, "find test binary")
	in, err := json.Marshal(ops)
	ok(t, err, "encode ops")
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), childEnv+"=1")
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helper process: %v\n%s", err, stderr.Bytes())
	}
	var res []int
	if err := json.Unmarshal(out, &res); err != nil || len(res) != len(ops) {
		t.Fatalf("helper process output %q: %v", out, err)
	}
	return res
}
