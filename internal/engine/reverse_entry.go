package engine

import (
	"strings"

	"github.com/encryptfs/encryptfs/internal/crypto/names"
	"golang.org/x/sys/unix"
)

// ViewKind is what an entry of the reverse view shows. Its value enters
// the keyed inode numbers of the view (Reverse.InodeNumber), so the
// constants must not be renumbered.
type ViewKind uint8

// The kinds of view entries.
const (
	ViewDir         ViewKind = iota + 1 // a plaintext directory
	ViewFile                            // a plaintext regular file, shown encrypted
	ViewSymlink                         // a plaintext symlink, target encrypted
	ViewSpecial                         // a fifo, socket or device node, shown as is
	ViewDirID                           // virtual encryptfs.dirid of directory rel
	ViewNameSidecar                     // virtual encryptfs.long.<H>.name of entry rel
	ViewLinkSidecar                     // virtual encryptfs.link.<H> of symlink rel
	ViewConfig                          // virtual encryptfs.conf in the root
)

// Virtual reports whether the kind is generated rather than a plaintext
// object.
func (k ViewKind) Virtual() bool { return k >= ViewDirID }

// ViewEntry is one entry of a view directory.
type ViewEntry struct {
	Name string      // the name in the view
	Kind ViewKind    // what it shows
	Rel  string      // the plaintext object it shows or describes
	St   unix.Stat_t // lstat of that object
}

// JoinRel appends a name to a relative plaintext directory path.
func JoinRel(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// splitRel returns the parent directory and base name of a non-root rel.
func splitRel(rel string) (dir, base string) {
	i := strings.LastIndexByte(rel, '/')
	if i < 0 {
		return "", rel
	}
	return rel[:i], rel[i+1:]
}

// kindOf maps a plaintext file type to the view kind.
func kindOf(mode uint32) ViewKind {
	switch mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return ViewDir
	case unix.S_IFREG:
		return ViewFile
	case unix.S_IFLNK:
		return ViewSymlink
	}
	return ViewSpecial
}

// MaxNameLen is the longest name in the view (statfs's f_namelen): that of
// a backing name.
const MaxNameLen = names.MaxBackingLen
