package upgrade

import (
	"errors"
	"fmt"
	"io"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/crypto/content"
	"golang.org/x/sys/unix"
)

// copyBufSize is the buffer of the compact step's copy of a file's bytes
// past group 0's chunks (a fixed size: nothing from CIPHERDIR sizes it).
const copyBufSize = 1 << 20

// reroot rebuilds the entries of DIRTY file n (in dirfd) from its chunks
// in the FileRoots layout and writes its clean header, durably
// (fileengine.File.RepairRoot, what fsck --repair does); a chunk that does not
// authenticate under v1's rules stops it and leaves the file as it was.
// The file's times are kept.
func (c *compacter) reroot(dirfd int, n cName) error {
	fd, st, err := backing.OpenRegular(dirfd, n.name, unix.O_RDWR)
	if err != nil {
		return err
	}
	bf := c.v1.Backing().NewFile(fd, &st)
	defer bf.Close()
	if err := c.old.Engine().Reroot(bf, n.place); err != nil {
		return err
	}
	return backing.UtimesNanoAt(dirfd, n.name, [2]unix.Timespec{st.Atim, st.Mtim})
}

// convert rewrites the files prepare left to convert, and links the
// names a crash split to their converted twin.
func (c *compacter) convert(progress func(Progress)) error {
	pr := Progress{TotalObjects: c.files, TotalBytes: c.bytes}
	report := func() {
		if progress != nil {
			progress(pr)
		}
	}
	report()
	for _, t := range c.temps {
		if err := c.inDir(t.dir, func(fd int) error { return c.v1.Backing().Unlinkat(fd, t.name, 0) }); err != nil && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("session: upgrade: remove a leftover temporary: %w", err)
		}
	}
	for _, in := range c.inodes {
		var err error
		switch in.state {
		case compactConvert:
			err = c.convertInode(in)
			c.converted++
			pr.Objects++
			pr.Bytes += in.st.Size
			report()
		case compactRelink:
			first := in.twin.names[0]
			for _, n := range in.names {
				if err = c.linkTo(first, n); err != nil {
					break
				}
				c.relinked++
			}
		}
		if err != nil {
			return fmt.Errorf("session: upgrade: %s: %w", in.names[0].plain, err)
		}
	}
	return nil
}

// convertInode rewrites file in under its first name in the compact
// layout, then links its other names to the copy; each directory changed
// is fsynced.
func (c *compacter) convertInode(in *cInode) error {
	first := in.names[0]
	err := c.inDir(first.dir, func(fd int) error {
		if err := c.compactFile(fd, first.name, in.st); err != nil {
			return err
		}
		return c.v1.Backing().Fsync(fd)
	})
	for _, n := range in.names[1:] {
		if err != nil {
			break
		}
		err = c.linkTo(first, n)
	}
	return err
}

// linkTo makes name n a hard link of src (relink: under a temporary
// name, renamed over n) and fsyncs n's directory.
func (c *compacter) linkTo(src, n cName) error {
	return c.inDir(src.dir, func(sfd int) error {
		return c.inDir(n.dir, func(nfd int) error {
			if err := c.relink(sfd, src.name, nfd, n.name); err != nil {
				return err
			}
			return c.v1.Backing().Fsync(nfd)
		})
	})
}

// compactFile replaces file name of dirfd, a clean file with roots in the
// FileRoots layout (its root was verified by the scan, st is what the
// scan found), by its copy in the compact layout (copyCompact).
func (c *compacter) compactFile(dirfd int, name string, want unix.Stat_t) error {
	srcfd, st, err := backing.OpenRegular(dirfd, name, unix.O_RDONLY)
	if err != nil {
		return err
	}
	defer backing.Close(srcfd)
	if st.Dev != want.Dev || st.Ino != want.Ino {
		return fmt.Errorf("the file changed during the upgrade")
	}
	src := backing.NewFile(srcfd, nil)
	hdr := make([]byte, content.HeaderSizeV2)
	if k, err := src.ReadAt(hdr, 0); k != len(hdr) {
		return fmt.Errorf("file header: %d bytes (%v)", k, err)
	}
	oldS := c.old.Engine().Suite()
	h, err := oldS.ParseHeader(hdr)
	if err != nil {
		return err
	}
	if h.Flags&content.FlagDirty != 0 || h.Size > uint64(oldS.MaxPlainSize()) || st.Size != oldS.CipherSize(int64(h.Size)) {
		return fmt.Errorf("the file changed during the upgrade")
	}
	return c.replaceWith(dirfd, name, srcfd, st, func(out *backing.ObservedFile) error {
		return c.copyCompact(out, src, hdr, int64(h.Size), st.Size)
	})
}

// copyCompact writes into out the compact layout of src (size bytes, the
// exact FileRoots CipherSize of plain bytes, header hdr): the header as
// it is, chunks 0..15 from their FileRoots offsets to their compact ones
// (a hole, whose entry is zero, stays a hole), the pieces of tag block 0
// the file has, and every byte from chunk 16 on at the same offset (group
// 0 keeps its size), holes kept. Nothing is decrypted: the scan checked
// the root, and each chunk's bytes and entry are copied as they are.
func (c *compacter) copyCompact(out *backing.ObservedFile, src *backing.File, hdr []byte, plain, size int64) error {
	oldS, newS := c.old.Engine().Suite(), c.b.Engine().Suite()
	cs, ccs, over := int64(oldS.ChunkSize()), int64(oldS.CipherChunkSize()), int64(oldS.Overhead())
	n := (plain + cs - 1) / cs
	if _, err := out.WriteAt(hdr, 0); err != nil {
		return err
	}
	block := make([]byte, content.TagBlockSize)
	if n > 0 {
		if err := readFullAt(src, block, oldS.TagBlockOffset(0)); err != nil {
			return err
		}
	}
	buf := make([]byte, ccs)
	var zero [content.TagSize]byte
	for i := range min(n, content.CompactHeadEntries) {
		if [content.TagSize]byte(block[i*content.TagSize:]) == zero {
			continue // a hole: its region stays a hole
		}
		chunk := buf
		if i == n-1 {
			chunk = buf[:plain-i*cs+over]
		}
		if err := readFullAt(src, chunk, oldS.ChunkOffset(uint64(i))); err != nil {
			return err
		}
		if _, err := out.WriteAt(chunk, newS.ChunkOffset(uint64(i))); err != nil {
			return err
		}
	}
	for _, p := range newS.TagPieces(0, uint64(n)) {
		if _, err := out.WriteAt(block[p.First*content.TagSize:(p.First+p.Count)*content.TagSize], p.Offset); err != nil {
			return err
		}
	}
	if n > content.CompactHeadEntries {
		if err := copyData(out, src, oldS.ChunkOffset(content.CompactHeadEntries), size); err != nil {
			return err
		}
	}
	return out.Truncate(newS.CipherSize(plain))
}

// copyData copies src's bytes [from, end) to the same offsets of out,
// skipping src's holes (SEEK_DATA; without it, everything is copied).
func copyData(out *backing.ObservedFile, src *backing.File, from, end int64) error {
	buf := make([]byte, copyBufSize)
	seek := true
	for off := from; off < end; {
		next := end
		if seek {
			d, err := src.SeekData(off)
			if errors.Is(err, io.EOF) {
				return nil // a hole to the end: Truncate makes it
			}
			var h int64
			if err == nil {
				h, err = src.SeekHole(d)
			}
			if err != nil || d < off || h <= d {
				seek = false
				continue
			}
			off, next = min(d, end), min(h, end)
		}
		for off < next {
			k := min(int64(len(buf)), next-off)
			if err := readFullAt(src, buf[:k], off); err != nil {
				return err
			}
			if _, err := out.WriteAt(buf[:k], off); err != nil {
				return err
			}
			off += k
		}
	}
	return nil
}

// readFullAt reads len(b) bytes of f at off; a short read is an error
// (the file shrank during the upgrade).
func readFullAt(f *backing.File, b []byte, off int64) error {
	k, err := f.ReadAt(b, off)
	if k == len(b) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		err = fmt.Errorf("the file shrank during the upgrade")
	}
	return err
}
