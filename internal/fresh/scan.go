package fresh

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"slices"
	"strings"

	"github.com/encryptfs/encryptfs/internal/backing"
	fc "github.com/encryptfs/encryptfs/internal/crypto/fresh"
	"github.com/encryptfs/encryptfs/internal/tree"
	"golang.org/x/sys/unix"
)

// Reader is what the scanner needs from the session: the file header
// parser (to read a file's ID and gen authenticated) and the name
// decryption (for the report's plaintext paths). Both come from the
// vault's session (session/fresh.go).
type Reader struct {
	// HeaderSize is the size of a file header (v1 or v2).
	HeaderSize int
	// Header parses and authenticates a header; it returns the file's ID
	// and its gen (0 where the format has none).
	Header func(b []byte) (fileID [fc.IDSize]byte, gen uint64, err error)
	// Name decrypts backing name b of the directory dirfd (ID dirID).
	Name func(dirfd int, dirID []byte, b string) (string, error)
	// Locate opens the directory with ID id where the engine last saw
	// it (engine.Vault.Locate), and only once it has read id in that
	// directory's encryptfs.dirid: never a directory found by the
	// locator's links alone, which may be stale. nil, or an error: the
	// batch finds it by walking the tree.
	Locate func(id []byte) (int, error)
	// Found tells the engine where a walk found directory id: at
	// backing name name of parent (nil parent: the root).
	Found func(id, parent []byte, name string)
}

// actual is the state of one backing name as found on disk.
type actual struct {
	present bool
	kind    fc.Kind
	id      [fc.IDSize]byte
	gen     uint64
	xattrs  [fc.IDSize]byte
}

// recorded reports whether a name of a directory is one manifests record:
// encrypted names and long-name entries (and their conflict copies), not
// EncryptFS's own files, temporaries, sidecars, or dot files (a sync
// tool's: .stfolder, rsync's .name.XXXXXX; encrypted names never start
// with a dot).
func recorded(b string) bool {
	if b == "" || b == "." || b == ".." || strings.HasPrefix(b, ".") {
		return false
	}
	return tree.IsEntryName(b)
}

// observe reads what name in dirfd is now.
func (r *Reader) observe(dirfd int, name string) (actual, error) {
	st, err := backing.Fstatat(dirfd, name)
	if errors.Is(err, unix.ENOENT) {
		return actual{}, nil
	}
	if err != nil {
		return actual{}, err
	}
	a := actual{present: true}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		a.kind = fc.KindDir
		sub, err := backing.OpenSubdir(dirfd, name)
		if err != nil {
			return a, err
		}
		defer backing.Close(sub)
		a.id = readDirID(sub)
		a.xattrs = xattrDigest(sub)
	case unix.S_IFREG:
		a.kind = fc.KindFile
		// O_NONBLOCK kept (as ReadFileAt keeps it): one pread of the
		// header and the xattrs, no fcntl to clear it per file.
		fd, _, err := backing.OpenRegular(dirfd, name, unix.O_RDONLY|unix.O_NONBLOCK)
		if err != nil {
			return a, err
		}
		defer backing.Close(fd)
		a.id, a.gen = r.fileID(fd, st.Size)
		a.xattrs = xattrDigest(fd)
	case unix.S_IFLNK:
		a.kind = fc.KindSymlink
		t, err := backing.Readlinkat(dirfd, name)
		if err != nil {
			return a, err
		}
		h := sha256.Sum256([]byte(t))
		copy(a.id[:], h[:])
	default:
		a.kind = fc.KindOther
	}
	return a, nil
}

// fileID reads a regular file's header: its ID and gen if the header
// authenticates; a digest of the bytes otherwise (never equal to an
// authentic record, so a forged header reads as changed). A 0-byte file
// has no header: zero ID.
func (r *Reader) fileID(fd int, size int64) (id [fc.IDSize]byte, gen uint64) {
	if size == 0 {
		return id, 0
	}
	b := make([]byte, r.HeaderSize)
	n, _ := unix.Pread(fd, b, 0)
	if n == len(b) {
		if id, gen, err := r.Header(b); err == nil {
			return id, gen
		}
	}
	h := sha256.Sum256(append([]byte("unauthenticated header\x00"), b[:max(n, 0)]...))
	copy(id[:], h[:])
	return id, ^uint64(0)
}

// readDirID returns the directory ID in dirfd's encryptfs.dirid (dirIDOf).
func readDirID(dirfd int) [fc.IDSize]byte { return dirIDOf(tree.ReadDirIDFile(dirfd)) }

// dirIDOf is the directory ID in an encryptfs.dirid as read, as
// tree.ParseDirIDFile splits it (the whole 16-byte v1 file, or the ID in
// the v2 form, format.md §14; its bindings are the tree's to check). A
// missing or malformed file gives a digest of what is there, never equal
// to an authentic ID.
func dirIDOf(r tree.DirIDRead) (id [fc.IDSize]byte) {
	if r.Err == nil {
		if f, err := tree.ParseDirIDFile(r.Raw); err == nil {
			copy(id[:], f.ID)
			return id
		}
	}
	var b []byte
	if r.Err == nil {
		b = r.Raw
	}
	h := sha256.Sum256(append([]byte("no dirid\x00"), b...))
	copy(id[:], h[:])
	return id
}

// xattrDigest is SHA-256 over the object's user.* backing xattrs, sorted
// by name (u16 name length, name, u32 value length, value), cut to 16
// bytes; zero if it has none. Only user.*: EncryptFS stores nothing else,
// and security.* labels differ between machines a vault syncs to.
func xattrDigest(fd int) (d [fc.IDSize]byte) {
	list, err := backing.Flistxattr(fd)
	if err != nil {
		return d
	}
	list = slices.DeleteFunc(list, func(n string) bool { return !strings.HasPrefix(n, "user.") })
	if len(list) == 0 {
		return d
	}
	slices.Sort(list)
	h := sha256.New()
	for _, n := range list {
		v, _ := backing.Fgetxattr(fd, n)
		h.Write(binary.BigEndian.AppendUint16(nil, uint16(len(n))))
		h.Write([]byte(n))
		h.Write(binary.BigEndian.AppendUint32(nil, uint32(len(v))))
		h.Write(v)
	}
	copy(d[:], h.Sum(nil))
	return d
}

// listRecorded returns the recorded names among dirfd's entries.
func listRecorded(dirfd int) ([]string, error) {
	ents, err := backing.ReadDir(dirfd)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if recorded(e.Name) {
			out = append(out, e.Name)
		}
	}
	return out, nil
}
