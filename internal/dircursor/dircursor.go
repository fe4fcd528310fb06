// Package dircursor is the position logic of a FUSE directory stream, shared
// by the forward file system and the reverse view: "." and ".." first, then
// the listing, with offsets that Seekdir takes back.
package dircursor

import (
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// Listing is a directory listing read at opendir.
type Listing interface {
	Len() int
	// Entry describes listing entry i: its name, file type bits and inode.
	Entry(i int) (name string, mode uint32, ino uint64)
}

// Cursor walks a Listing. The zero value is at the start.
type Cursor struct{ pos int } // next entry; 0 and 1 are "." and ".."

// Next returns the next entry, or nil at the end. selfIno is the
// directory's own inode number.
func (c *Cursor) Next(selfIno uint64, l Listing) *fuse.DirEntry {
	i := c.pos
	switch {
	case i == 0:
		c.pos++
		return &fuse.DirEntry{Name: ".", Mode: unix.S_IFDIR, Ino: selfIno, Off: 1}
	case i == 1:
		c.pos++
		return &fuse.DirEntry{Name: "..", Mode: unix.S_IFDIR, Ino: 1, Off: 2}
	case i-2 >= l.Len():
		return nil
	}
	name, mode, ino := l.Entry(i - 2)
	c.pos++
	return &fuse.DirEntry{Name: name, Mode: mode, Ino: ino, Off: uint64(c.pos)}
}

// Seek moves to an offset from an earlier entry. It reports whether that
// was a rewind (offset 0), after which the caller lists the directory again.
func (c *Cursor) Seek(off uint64) (rewind bool) {
	c.pos = int(off)
	return off == 0
}

// Last is the listing index of the entry Next returned last (negative after
// "." and ".."): READDIRPLUS looks that entry up right after returning it.
func (c *Cursor) Last() int { return c.pos - 3 }
