package cli

import (
	"errors"
	"fmt"
	"github.com/spf13/cobra"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"syscall"
	"time"

	"github.com/encryptfs/encryptfs/vault"
	"golang.org/x/sys/unix"
)

func newExportCommand(a *App) *cobra.Command {
	cmd := newCommand("export", "CIPHERDIR DESTDIR [PATH]", 2, 3, groupOffline, "decrypt a vault (or part of it) into a plain directory", dirArg, dirArg, vaultArg)
	cmd.Long = `decrypt a vault (or part of it) into a plain directory.

DESTDIR must be empty or missing (export creates it, and removes it again
if export fails before writing anything). A directory PATH (default: the
vault's root) is copied as "rsync -a PATH/ DESTDIR/" copies it: its
contents, not PATH itself, go into DESTDIR. A file PATH becomes
DESTDIR/NAME. Files keep their mode, times and user xattrs (and, as root,
owners); a damaged entry is reported and skipped (exit 11), never left
half written.`
	fs := cmd.Flags()
	var vf vaultFlags
	vf.register(fs)
	asJSON := fs.Bool("json", false, "print progress as JSON lines on stderr")
	flagGroup(fs, groupOutput, "json")
	cmd.RunE = func(_ *cobra.Command, pos []string) error {
		src := ""
		if len(pos) == 3 {
			src = pos[2]
		}
		dest := pos[1]
		created, err := prepareEmptyDir("export", "DESTDIR", dest)
		if err != nil {
			return withCode(ExitError, err)
		}
		// A wrong password, a missing PATH or a Ctrl-C before anything
		// was exported leaves no new DESTDIR behind.
		cleanup := a.removeOnInterrupt(dest, created)
		defer cleanup.stop()
		v, err := a.openVault(pos[0], vf)
		if err != nil {
			return cleanup.fail(err)
		}
		defer v.Close()
		fi, err := v.Stat(src)
		if err != nil {
			return cleanup.fail(vaultPathError("export", pos[0], src, err))
		}
		cleanup.stop()
		prog := a.newProgress("export", *asJSON)
		if prog != nil {
			prog.setTotals(vaultTotals(v, src, fi))
		}
		p := &problems{a: a, cmd: "export", progress: prog}
		target := dest
		if !fi.IsDir() {
			target = filepath.Join(dest, path.Base(src))
		}
		e := exporter{v: v, p: p, progress: prog}
		e.entry(src, target, fi)
		e.finishDirs()
		prog.finish()
		if p.failed == 0 {
			// A success summary: stderr (stdout is for a command's data;
			// progress is on stderr too), without the error prefix.
			fmt.Fprintf(a.Stderr, "exported %s, %s, %s to %s\n", plural(e.files, "file"), plural(e.dirs, "directory"), plural(e.links, "symlink"), dest)
		}
		return p.result()
	}
	return cmd
}

// exporter copies plaintext out of a vault.
type exporter struct {
	v                  *vault.Vault
	p                  *problems
	progress           *progress
	files, dirs, links int
	dirTimes           []dirTime // set after the directories' contents
}

// vaultTotals counts the regular files and their bytes under name, for
// the progress bar's totals (entries that cannot be read count nothing).
func vaultTotals(v *vault.Vault, name string, fi fs.FileInfo) (files, bytes int64) {
	switch {
	case fi.Mode().IsRegular():
		return 1, fi.Size()
	case fi.IsDir():
		ents, _ := v.ReadDir(name)
		for _, ent := range ents {
			if info, err := ent.Info(); err == nil {
				f, b := vaultTotals(v, path.Join(name, ent.Name()), info)
				files, bytes = files+f, bytes+b
			}
		}
	}
	return files, bytes
}

type dirTime struct {
	path string
	mode fs.FileMode
	mt   time.Time
	info fs.FileInfo // for the owner
}

// owner returns the uid and gid behind fi (a vault's or the OS's FileInfo).
func owner(fi fs.FileInfo) (uid, gid int, ok bool) {
	if st, isStat := fi.Sys().(*unix.Stat_t); isStat {
		return int(st.Uid), int(st.Gid), true
	}
	if st, isStat := fi.Sys().(*syscall.Stat_t); isStat {
		return int(st.Uid), int(st.Gid), true
	}
	return 0, 0, false
}

// chownLike gives path fi's owner when running as root (only root can give
// files away; others keep their own ownership, as cp -a does).
func chownLike(path string, fi fs.FileInfo) error {
	if os.Geteuid() != 0 || fi == nil {
		return nil
	}
	if uid, gid, ok := owner(fi); ok {
		return os.Lchown(path, uid, gid)
	}
	return nil
}

func (e *exporter) entry(name, dest string, fi fs.FileInfo) {
	var err error
	switch mode := fi.Mode(); {
	case mode.IsDir():
		err = e.dir(name, dest, fi)
	case mode.IsRegular():
		err = e.file(name, dest, fi)
	case mode&fs.ModeSymlink != 0:
		var target string
		if target, err = e.v.Readlink(name); err == nil {
			if err = os.Symlink(target, dest); err == nil {
				e.links++
				err = chownLike(dest, fi)
			}
		}
	case mode&fs.ModeNamedPipe != 0:
		err = unix.Mkfifo(dest, uint32(mode.Perm()))
	default:
		err = fmt.Errorf("not exported: %v", mode.Type())
	}
	if err != nil {
		e.p.report(name, err)
	}
}

func (e *exporter) dir(name, dest string, fi fs.FileInfo) error {
	if name != "" || dest != "" {
		if err := os.Mkdir(dest, 0o700); err != nil && !(errors.Is(err, fs.ErrExist) && isDir(dest)) {
			return err
		}
	}
	e.dirs++
	e.copyXattrs(name, dest)
	e.dirTimes = append(e.dirTimes, dirTime{dest, fi.Mode(), fi.ModTime(), fi})
	ents, err := e.v.ReadDir(name)
	var bad *vault.BadEntriesError
	if errors.As(err, &bad) {
		for _, b := range bad.Backing {
			e.p.report(path.Join(name, b), fmt.Errorf("backing entry does not decrypt (foreign, conflict copy or tampered), not exported: %w", vault.ErrCorrupt))
		}
		for _, f := range bad.Failed {
			e.p.report(path.Join(name, f.Name), fmt.Errorf("not exported: %w", f.Err))
		}
	} else if err != nil {
		return err
	}
	for _, ent := range ents {
		info, _ := ent.Info()
		e.entry(path.Join(name, ent.Name()), filepath.Join(dest, ent.Name()), info)
	}
	return nil
}

func (e *exporter) file(name, dest string, fi fs.FileInfo) error {
	in, err := e.v.Open(name)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dest, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = copyBuffer(progressWriter(out, e.progress), in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(dest) // never leave a silently partial file
		return err
	}
	e.files++
	e.progress.fileDone()
	e.copyXattrs(name, dest)
	return errors.Join(chownLike(dest, fi), os.Chmod(dest, fi.Mode().Perm()|fi.Mode()&(fs.ModeSetgid|fs.ModeSetuid|fs.ModeSticky)),
		os.Chtimes(dest, time.Time{}, fi.ModTime()))
}

// copyXattrs copies user xattrs; a destination that does not support them
// is reported once per entry.
func (e *exporter) copyXattrs(name, dest string) {
	attrs, err := e.v.ListXattr(name)
	if err != nil {
		e.p.report(name, err)
		return
	}
	for _, attr := range attrs {
		val, err := e.v.GetXattr(name, attr)
		if err == nil {
			err = unix.Lsetxattr(dest, attr, val, 0)
		}
		if err != nil {
			e.p.report(name+" xattr "+attr, err)
		}
	}
}

// finishDirs sets directory modes and times last, deepest first, so that
// writing their contents does not change them and a read-only directory
// can still be filled.
func (e *exporter) finishDirs() {
	for i := len(e.dirTimes) - 1; i >= 0; i-- {
		d := e.dirTimes[i]
		perm := d.mode.Perm() | d.mode&(fs.ModeSetgid|fs.ModeSticky)
		if err := errors.Join(chownLike(d.path, d.info), os.Chmod(d.path, perm), os.Chtimes(d.path, time.Time{}, d.mt)); err != nil {
			e.p.report(d.path, err)
		}
	}
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}
