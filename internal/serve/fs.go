package serve

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"sync"

	"github.com/encryptfs/encryptfs/internal/fault"
	"github.com/encryptfs/encryptfs/vault"
	"golang.org/x/net/webdav"
	"golang.org/x/sys/unix"
)

// Modes of what WebDAV creates: a client sends no mode, and x/net/webdav
// asks for 0777/0666 (or a copied source's mode). The vault stores the
// mode on the backing entry, so it is bounded as a umask of 022 would.
const (
	dirPerm  fs.FileMode = 0o755
	filePerm fs.FileMode = 0o644
)

// maxRemoveDepth bounds the recursion of a DELETE of a collection: the
// tree comes from CIPHERDIR, which the storage attacker writes.
const maxRemoveDepth = 256

// errReadOnly is what a write to a --ro server gets (403 Forbidden).
var errReadOnly = errors.New("serve: read-only")

// errTooDeep refuses a DELETE of a tree deeper than maxRemoveDepth.
var errTooDeep = errors.New("serve: directory tree too deep to remove")

// vaultFS is x/net/webdav's FileSystem over an open vault: the same
// engine as the mount (vault -> session), so binding, file roots,
// freshness records and conflict aliases are the mount's. Names are
// plaintext; nothing of CIPHERDIR's encrypted names reaches a client.
type vaultFS struct {
	v        *vault.Vault
	readOnly bool
	propsMu  sync.Mutex // serialises PROPPATCH's read, change, write (props.go)
}

var _ webdav.FileSystem = (*vaultFS)(nil)

// Mkdir makes a collection (MKCOL).
func (f *vaultFS) Mkdir(_ context.Context, name string, _ os.FileMode) error {
	if f.readOnly {
		return errReadOnly
	}
	return davErr(f.v.Mkdir(name, dirPerm))
}

// OpenFile opens a file or a directory (a listing).
func (f *vaultFS) OpenFile(ctx context.Context, name string, flag int, perm os.FileMode) (webdav.File, error) {
	writes := flag&(os.O_WRONLY|os.O_RDWR|os.O_CREATE|os.O_TRUNC|os.O_APPEND) != 0
	if writes && f.readOnly {
		return nil, errReadOnly
	}
	memo := memoOf(ctx)
	fi, known := memo.stat(name)
	var err error
	if !known || flag != os.O_RDONLY {
		fi, err = f.stat(name)
	}
	switch {
	case err == nil && fi.IsDir():
		// O_RDWR alone is x/net/webdav's open for PROPPATCH.
		if flag&(os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_APPEND) != 0 {
			return nil, &fs.PathError{Op: "open", Path: name, Err: errIsDir}
		}
		return &dirFile{fs: f, v: f.v, name: name, info: fi, memo: memo}, nil
	case err != nil && !(errors.Is(err, fs.ErrNotExist) && flag&os.O_CREATE != 0):
		return nil, davErr(err)
	}
	vf, err := f.v.OpenFile(name, flag, filePerm&perm|0o600)
	if err != nil {
		return nil, davErr(err)
	}
	return &file{File: vf, fs: f, base: path.Base("/" + name), writable: writes, memo: memo}, nil
}

// errIsDir refuses writing to a collection as if it were a file.
var errIsDir = errors.New("is a directory")

// RemoveAll removes name and, for a collection, everything in it
// (DELETE; MOVE and COPY with Overwrite: T).
func (f *vaultFS) RemoveAll(_ context.Context, name string) error {
	if f.readOnly {
		return errReadOnly
	}
	return davErr(f.removeAll(name, 0))
}

func (f *vaultFS) removeAll(name string, depth int) error {
	if depth > maxRemoveDepth {
		return errTooDeep
	}
	fi, err := f.v.Stat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.IsDir() {
		// Every entry, symlinks included (the listing a client sees
		// leaves them out): DELETE of a collection is Depth: infinity.
		// Entries that do not decrypt stay, and the Remove below fails
		// on them: nothing the vault cannot name is removed.
		ents, err := f.v.ReadDir(name)
		if err != nil {
			return err
		}
		for _, e := range ents {
			if err := f.removeAll(path.Join(name, e.Name()), depth+1); err != nil {
				return err
			}
		}
	}
	return f.v.Remove(name)
}

// Rename moves oldName to newName (MOVE; x/net/webdav has removed an
// existing destination first when Overwrite allowed it).
func (f *vaultFS) Rename(_ context.Context, oldName, newName string) error {
	if f.readOnly {
		return errReadOnly
	}
	if clean(oldName) == "/" || clean(newName) == "/" {
		return &fs.PathError{Op: "rename", Path: oldName, Err: fs.ErrPermission}
	}
	return davErr(f.v.Rename(oldName, newName))
}

// Stat describes name: a regular file or a directory. Symlinks, devices
// and FIFOs are not shown (WebDAV has no such resources, and a symlink
// would have to be followed, which the vault never does): they are not
// found.
func (f *vaultFS) Stat(ctx context.Context, name string) (os.FileInfo, error) {
	if fi, ok := memoOf(ctx).stat(name); ok {
		return fi, nil
	}
	fi, err := f.stat(name)
	return fi, davErr(err)
}

func (f *vaultFS) stat(name string) (os.FileInfo, error) {
	fi, err := f.v.Stat(name)
	if err != nil {
		return nil, err
	}
	if !shown(fi) {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
	}
	return named{fi, path.Base("/" + name)}, nil
}

// davErr gives the vault's errors of the kinds x/net/webdav tells
// apart (os.IsNotExist, os.IsExist, os.IsPermission, which look one
// *fs.PathError deep only) their errno directly under the PathError, so
// that its status codes follow (404 and 409, 405, 403). Other errors pass
// as they are: x/net/webdav answers them with its generic status, and
// the log line names their kind.
func davErr(err error) error {
	if err == nil {
		return nil
	}
	var errno error
	switch fault.Of(err) {
	case fault.NotFound:
		errno = unix.ENOENT
	case fault.Exists:
		errno = unix.EEXIST
	case fault.NotPermitted, fault.ReadOnly:
		errno = unix.EPERM
	default:
		return err
	}
	pe := &fs.PathError{Op: "serve", Err: errno}
	var orig *fs.PathError
	if errors.As(err, &orig) {
		pe.Op, pe.Path = orig.Op, orig.Path
	}
	return pe
}

// shown tells whether an entry is served: regular files and directories.
func shown(fi fs.FileInfo) bool {
	return fi.Mode().IsRegular() || fi.IsDir()
}

// clean is the slash-cleaned absolute form of a WebDAV name.
func clean(name string) string { return path.Clean("/" + name) }

// named is a FileInfo whose Name is the base name x/net/webdav shows
// (the vault's File.Stat names the path it was opened with).
type named struct {
	fs.FileInfo
	name string
}

func (n named) Name() string { return n.name }

// file is an open regular file of the vault.
type file struct {
	*vault.File
	fs       *vaultFS
	base     string
	writable bool
	memo     *listMemo // a PROPFIND's, else nil
}

// Readdir of a regular file fails, as on an *os.File.
func (f *file) Readdir(int) ([]fs.FileInfo, error) {
	return nil, &fs.PathError{Op: "readdir", Path: f.Name(), Err: errors.New("not a directory")}
}

// Stat names the file by its base name.
func (f *file) Stat() (fs.FileInfo, error) {
	fi, err := f.File.Stat()
	if err != nil {
		return nil, err
	}
	if f.memo != nil {
		return sniffingInfo{named{fi, f.base}, f.File}, nil
	}
	return named{fi, f.base}, nil
}

// Close makes what a PUT wrote durable before the response says 201:
// the engine file's Sync writes the clean header and roots.
func (f *file) Close() error {
	var err error
	if f.writable {
		err = f.File.Sync()
	}
	return errors.Join(err, f.File.Close())
}

// dirFile is a collection opened for listing (PROPFIND Depth: 1, COPY).
type dirFile struct {
	fs   *vaultFS
	v    *vault.Vault
	name string
	info fs.FileInfo
	ents []fs.FileInfo // nil until the first Readdir
	memo *listMemo     // a PROPFIND's, else nil
	read bool
	pos  int
}

func (d *dirFile) Close() error                 { return nil }
func (d *dirFile) Read([]byte) (int, error)     { return 0, d.err("read", errIsDir) }
func (d *dirFile) Write([]byte) (int, error)    { return 0, d.err("write", errIsDir) }
func (d *dirFile) Stat() (fs.FileInfo, error)   { return d.info, nil }
func (d *dirFile) err(op string, e error) error { return &fs.PathError{Op: op, Path: d.name, Err: e} }

// Seek is allowed only to the start (http.ServeContent is never given a
// collection: x/net/webdav answers GET on one with 405).
func (d *dirFile) Seek(off int64, whence int) (int64, error) {
	if off == 0 && whence == io.SeekStart {
		d.pos = 0
		return 0, nil
	}
	return 0, d.err("seek", errIsDir)
}

// Readdir lists the collection like os.File.Readdir. Entries whose
// names do not decrypt are left out (the vault returns the others with a
// *vault.BadEntriesError, which is not shown: its backing names are
// CIPHERDIR's); symlinks and special files are not shown (Stat).
func (d *dirFile) Readdir(count int) ([]fs.FileInfo, error) {
	if !d.read {
		ents, err := d.v.ReadDir(d.name)
		var bad *vault.BadEntriesError
		if err != nil && !errors.As(err, &bad) {
			return nil, err
		}
		for _, e := range ents {
			fi, err := e.Info()
			if err != nil || !shown(fi) {
				continue
			}
			d.ents = append(d.ents, named{fi, e.Name()})
			d.memo.putStat(path.Join(clean(d.name), e.Name()), named{fi, e.Name()})
		}
		d.read = true
	}
	rest := d.ents[d.pos:]
	if count <= 0 {
		d.pos = len(d.ents)
		return rest, nil
	}
	if len(rest) == 0 {
		return nil, io.EOF
	}
	n := min(count, len(rest))
	d.pos += n
	return rest[:n], nil
}

// inside tells whether dst is src or lies beneath it (a COPY or MOVE of
// a collection into itself).
func inside(src, dst string) bool {
	s, d := clean(src), clean(dst)
	return s == d || strings.HasPrefix(d, strings.TrimSuffix(s, "/")+"/")
}
