package cli

import (
	"errors"
	"fmt"
	"github.com/spf13/cobra"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"time"

	"github.com/encryptfs/encryptfs/internal/session"
	"github.com/encryptfs/encryptfs/vault"
	"golang.org/x/sys/unix"
)

func newImportCommand(a *App) *cobra.Command {
	cmd := newCommand("import", "CIPHERDIR SRC [DESTPATH]", 2, 3, groupOffline, "encrypt a plain file or directory into a vault", dirArg, fileArg, vaultArg)
	cmd.Long = `encrypt a plain file or directory into a vault.

A directory SRC is copied as "rsync -a SRC/ DESTPATH/" copies it: its
contents, not SRC itself, go into DESTPATH (a path in the vault; default
the root; created if missing). To keep the directory's name, say it:
"import ~/vault ~/Documents /Documents". A file SRC becomes DESTPATH/NAME.
Modes, times, user xattrs (and, as root, owners) are kept; an entry that
exists in the vault already is not overwritten (each is reported, exit 1).`
	fs := cmd.Flags()
	var vf vaultFlags
	vf.register(fs)
	var stateDir string
	registerStateDir(fs, &stateDir)
	force := fs.Bool("force", false, "import even though the vault is mounted (the mount's caches may not see the new entries at once)")
	asJSON := fs.Bool("json", false, "print progress as JSON lines on stderr")
	flagGroup(fs, groupOutput, "json")
	cmd.RunE = func(_ *cobra.Command, pos []string) error {
		dest := ""
		if len(pos) == 3 {
			dest = pos[2]
		}
		src := pos[1]
		srcInfo, err := os.Lstat(src)
		if errors.Is(err, os.ErrNotExist) {
			return reword(err, "import: SRC %s does not exist", src)
		}
		if err != nil {
			return fmt.Errorf("import: SRC %s: %w", src, errors.Unwrap(err))
		}
		mnt := mountedAt(pos[0])
		if mnt != "" && !*force {
			return errorfCode(ExitCipherDir, "import: %s is mounted on %s; copy into the mount instead, or unmount it first", pos[0], mnt)
		}
		// import writes: it records freshness (freshopts.go), unless a
		// mount on this machine holds the state (--force): then the new
		// entries are recorded by no one, which freshness reports as
		// behind, never as rolled back.
		use := session.FreshnessRecord
		if mnt != "" {
			use = session.FreshnessOff
			fmt.Fprintf(a.Stderr, "encryptfs: note: import while mounted: freshness does not record these entries (encryptfs freshness accept %s records them)\n", pos[0])
		}
		v, err := a.openVaultFresh(pos[0], vf, use, stateDir)
		if err != nil {
			return err
		}
		defer v.Close()
		if dest != "" {
			if err := v.MkdirAll(dest, 0o755); err != nil {
				return err
			}
		}
		prog := a.newProgress("import", *asJSON)
		if prog != nil {
			prog.setTotals(localTotals(src))
		}
		p := &problems{a: a, cmd: "import", progress: prog}
		im := importer{v: v, p: p, progress: prog}
		if srcInfo.IsDir() {
			im.tree(src, dest)
		} else {
			im.entry(src, path.Join(dest, filepath.Base(src)), srcInfo)
		}
		im.finishDirs()
		prog.finish()
		if err := v.Close(); err != nil {
			// The last freshness batch, or a file's close.
			p.report("", err)
		}
		if p.failed == 0 {
			fmt.Fprintf(a.Stderr, "imported %s, %s, %s\n", plural(im.files, "file"), plural(im.dirs, "directory"), plural(im.links, "symlink"))
		}
		return p.result()
	}
	return cmd
}

// importer copies a plaintext tree into a vault.
type importer struct {
	v                  *vault.Vault
	p                  *problems
	progress           *progress
	files, dirs, links int
	dirTimes           []dirTime
}

// localTotals counts the regular files and their bytes under src (not
// following symlinks), for the progress bar's totals.
func localTotals(src string) (files, bytes int64) {
	filepath.WalkDir(src, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				files, bytes = files+1, bytes+info.Size()
			}
		}
		return nil
	})
	return files, bytes
}

// tree imports the contents of directory src into vault directory dest.
func (im *importer) tree(src, dest string) {
	ents, err := os.ReadDir(src)
	if err != nil {
		im.p.report(src, err)
		return
	}
	for _, ent := range ents {
		fi, err := ent.Info()
		if err != nil {
			im.p.report(filepath.Join(src, ent.Name()), err)
			continue
		}
		im.entry(filepath.Join(src, ent.Name()), path.Join(dest, ent.Name()), fi)
	}
}

func (im *importer) entry(src, dest string, fi fs.FileInfo) {
	var err error
	switch mode := fi.Mode(); {
	case mode.IsDir():
		if err = im.v.Mkdir(dest, 0o700); err == nil {
			im.dirs++
			im.dirTimes = append(im.dirTimes, dirTime{dest, mode, fi.ModTime(), fi})
			im.copyXattrs(src, dest)
			im.tree(src, dest)
		}
	case mode.IsRegular():
		err = im.file(src, dest, fi)
	case mode&fs.ModeSymlink != 0:
		var target string
		if target, err = os.Readlink(src); err == nil {
			if err = im.v.Symlink(target, dest); err == nil {
				im.links++
				err = im.chownLike(dest, fi)
			}
		}
	default:
		err = fmt.Errorf("not imported: %v", mode.Type())
	}
	if err != nil {
		im.p.report(src, err)
	}
}

func (im *importer) file(src, dest string, fi fs.FileInfo) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := im.v.OpenFile(dest, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = copyBuffer(progressWriter(out, im.progress), in)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		im.v.Remove(dest) // never leave a silently partial file
		return err
	}
	im.files++
	im.progress.fileDone()
	im.copyXattrs(src, dest)
	return errors.Join(im.chownLike(dest, fi), im.v.Chmod(dest, fi.Mode()&(fs.ModePerm|fs.ModeSetgid|fs.ModeSetuid|fs.ModeSticky)),
		im.v.Chtimes(dest, time.Time{}, fi.ModTime()))
}

// copyXattrs copies the user.* xattrs of src.
func (im *importer) copyXattrs(src, dest string) {
	buf := make([]byte, 64<<10)
	n, err := unix.Llistxattr(src, buf)
	if err != nil {
		if !errors.Is(err, unix.ENOTSUP) {
			im.p.report(src, err)
		}
		return
	}
	for _, name := range splitNul(buf[:n]) {
		if len(name) < 5 || name[:5] != "user." {
			continue
		}
		vn, err := unix.Lgetxattr(src, name, buf)
		if err == nil {
			err = im.v.SetXattr(dest, name, append([]byte(nil), buf[:vn]...))
		}
		if err != nil {
			im.p.report(src+" xattr "+name, err)
		}
	}
}

func splitNul(b []byte) []string {
	var out []string
	start := 0
	for i, c := range b {
		if c == 0 {
			if i > start {
				out = append(out, string(b[start:i]))
			}
			start = i + 1
		}
	}
	return out
}

// finishDirs sets the imported directories' modes and times, deepest first.
func (im *importer) finishDirs() {
	for i := len(im.dirTimes) - 1; i >= 0; i-- {
		d := im.dirTimes[i]
		perm := d.mode & (fs.ModePerm | fs.ModeSetgid | fs.ModeSticky)
		if err := errors.Join(im.chownLike(d.path, d.info), im.v.Chmod(d.path, perm), im.v.Chtimes(d.path, time.Time{}, d.mt)); err != nil {
			im.p.report(d.path, err)
		}
	}
}

// chownLike gives a vault entry fi's owner when running as root.
func (im *importer) chownLike(dest string, fi fs.FileInfo) error {
	if os.Geteuid() != 0 {
		return nil
	}
	if uid, gid, ok := owner(fi); ok {
		return im.v.Lchown(dest, uid, gid)
	}
	return nil
}
