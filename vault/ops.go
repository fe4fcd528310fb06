package vault

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// Stat describes the entry at name without following a final symlink
// (like os.Lstat: symlinks are never followed inside a vault).
func (v *Vault) Stat(name string) (fs.FileInfo, error) {
	fi, err := v.stat(name)
	return fi, pathErr("stat", name, err)
}

func (v *Vault) stat(name string) (fs.FileInfo, error) {
	if len(split(name)) == 0 {
		if err := v.checkOpen(); err != nil {
			return nil, err
		}
		st, err := v.eng.StatRoot()
		if err != nil {
			return nil, err
		}
		return &fileInfo{name: "/", size: st.Size, st: st}, nil
	}
	ref, err := v.resolve(name)
	if err != nil {
		return nil, err
	}
	defer ref.release()
	return statEntry(ref)
}

// BadEntriesError lists backing entries of a directory whose names do not
// decrypt (foreign files, sync-conflict copies, tampered names), and
// entries whose names decrypt but which cannot be described (a symlink
// whose target fails authentication, a file of an impossible size).
// ReadDir returns it together with every entry it could list, so that one
// damaged entry does not hide its siblings.
type BadEntriesError struct {
	Dir     string
	Backing []string     // backing names
	Failed  []EntryError // plaintext names with their errors
}

// EntryError is an entry of a directory that could not be listed.
type EntryError struct {
	Name string // plaintext name
	Err  error  // an *fs.PathError
}

func (e *BadEntriesError) Error() string {
	msg := "vault: " + e.Dir + ": "
	if len(e.Backing) > 0 {
		msg += "entries that do not decrypt: " + strings.Join(e.Backing, ", ")
	}
	for i, f := range e.Failed {
		if i > 0 || len(e.Backing) > 0 {
			msg += "; "
		}
		msg += f.Err.Error()
	}
	return msg
}

// Unwrap makes errors.Is(err, ErrCorrupt) true.
func (e *BadEntriesError) Unwrap() error { return ErrCorrupt }

// ReadDir lists a directory sorted by name. If some backing entries do not
// decrypt, the others are returned with a *BadEntriesError.
func (v *Vault) ReadDir(name string) ([]fs.DirEntry, error) {
	d, err := v.openDir(split(name))
	if err != nil {
		return nil, pathErr("readdir", name, err)
	}
	defer d.Close()
	ents, bad, err := d.List()
	if err != nil {
		return nil, pathErr("readdir", name, err)
	}
	out := make([]fs.DirEntry, 0, len(ents))
	be := &BadEntriesError{Dir: name}
	for _, e := range ents {
		fi, err := statEntry(entryRef{parent: d.Dir, name: e.Name})
		if errors.Is(err, unix.ENOENT) {
			continue // removed while listing
		}
		if err != nil {
			be.Failed = append(be.Failed, EntryError{e.Name.Plain, pathErr("readdir", path.Join(name, e.Name.Plain), err)})
			continue
		}
		out = append(out, dirEntry{fi})
	}
	slices.SortFunc(out, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	for _, b := range bad {
		be.Backing = append(be.Backing, b.Backing)
	}
	if len(be.Backing) > 0 || len(be.Failed) > 0 {
		return out, be
	}
	return out, nil
}

// Mkdir creates a directory with perm (permission bits, setgid, sticky).
func (v *Vault) Mkdir(name string, perm fs.FileMode) error {
	ref, err := v.resolve(name)
	if err != nil {
		return pathErr("mkdir", name, err)
	}
	defer ref.release()
	_, err = ref.parent.Mkdir(ref.name, unixMode(perm))
	if err == nil {
		err = ref.parent.Sync()
	}
	return pathErr("mkdir", name, err)
}

// MkdirAll creates a directory and any missing parents.
func (v *Vault) MkdirAll(name string, perm fs.FileMode) error {
	comps := split(name)
	for i := range comps {
		p := strings.Join(comps[:i+1], "/")
		err := v.Mkdir(p, perm)
		if err == nil || !errors.Is(err, fs.ErrExist) {
			if err != nil {
				return err
			}
			continue
		}
		if fi, serr := v.Stat(p); serr != nil || !fi.IsDir() {
			return pathErr("mkdir", p, unix.ENOTDIR)
		}
	}
	return nil
}

// unixMode maps permission, setgid and sticky bits to st_mode bits.
func unixMode(perm fs.FileMode) uint32 {
	m := uint32(perm.Perm())
	if perm&fs.ModeSetgid != 0 {
		m |= unix.S_ISGID
	}
	if perm&fs.ModeSticky != 0 {
		m |= unix.S_ISVTX
	}
	if perm&fs.ModeSetuid != 0 {
		m |= unix.S_ISUID
	}
	return m
}

// Remove removes a file, symlink or empty directory.
func (v *Vault) Remove(name string) error {
	ref, err := v.resolve(name)
	if err != nil {
		return pathErr("remove", name, err)
	}
	defer ref.release()
	err = ref.parent.Remove(ref.name)
	v.dirs.invalidate(name)
	return pathErr("remove", name, err)
}

// Rename moves oldName to newName, replacing newName like rename(2).
func (v *Vault) Rename(oldName, newName string) error {
	from, err := v.resolve(oldName)
	if err != nil {
		return pathErr("rename", oldName, err)
	}
	defer from.release()
	to, err := v.resolve(newName)
	if err != nil {
		return pathErr("rename", newName, err)
	}
	defer to.release()
	err = from.parent.Rename(from.name, to.parent, to.name, 0)
	v.dirs.invalidate(oldName)
	v.dirs.invalidate(newName)
	return pathErr("rename", oldName, err)
}

// Symlink creates name as a symlink to target (stored encrypted).
func (v *Vault) Symlink(target, name string) error {
	ref, err := v.resolve(name)
	if err != nil {
		return pathErr("symlink", name, err)
	}
	defer ref.release()
	return pathErr("symlink", name, ref.parent.Symlink(ref.name, target))
}

// Readlink returns the decrypted target of symlink name.
func (v *Vault) Readlink(name string) (string, error) {
	ref, err := v.resolve(name)
	if err != nil {
		return "", pathErr("readlink", name, err)
	}
	defer ref.release()
	target, err := ref.parent.Readlink(ref.name)
	return target, pathErr("readlink", name, err)
}

// ReadFile returns a whole file's plaintext.
func (v *Vault) ReadFile(name string) ([]byte, error) {
	f, err := v.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// WriteFile writes data to a file, creating it with perm or truncating it.
func (v *Vault) WriteFile(name string, data []byte, perm fs.FileMode) error {
	f, err := v.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}
