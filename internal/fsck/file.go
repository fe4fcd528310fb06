package fsck

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/encryptfs/encryptfs/internal/engine"
	"golang.org/x/sys/unix"
)

// readOnly is a engine.Backing over a backing file opened O_RDONLY that
// refuses every write, so no code path can modify the vault. size, when
// not negative, replaces the real size (the clipped view of a file whose
// size is impossible, so that its leading chunks can still be read).
type readOnly struct {
	f    *os.File
	size int64
}

// errReadOnly is returned by every write to a readOnly backing.
var errReadOnly = errors.New("fsck: backing file is read-only")

func (r *readOnly) ReadAt(p []byte, off int64) (int, error) { return r.f.ReadAt(p, off) }
func (r *readOnly) WriteAt([]byte, int64) (int, error)      { return 0, errReadOnly }
func (r *readOnly) Truncate(int64) error                    { return errReadOnly }
func (r *readOnly) Sync() error                             { return nil }
func (r *readOnly) Stat() (os.FileInfo, error) {
	fi, err := r.f.Stat()
	if err != nil || r.size < 0 {
		return fi, err
	}
	return sizedInfo{fi, r.size}, nil
}

// sizedInfo is a FileInfo with another size.
type sizedInfo struct {
	os.FileInfo
	size int64
}

func (s sizedInfo) Size() int64 { return s.size }

// openReadOnly opens a backing file for reading without updating its
// access time when the kernel allows that (O_NOATIME needs ownership).
func openReadOnly(dir *engine.InspectDir, name string) (*os.File, error) {
	// OpenRegular: a FIFO swapped in after the walk's stat must not hang fsck.
	fd, _, err := dir.OpenRegular(name, unix.O_RDONLY|unix.O_NOATIME)
	if errors.Is(err, unix.EPERM) {
		fd, _, err = dir.OpenRegular(name, unix.O_RDONLY)
	}
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), name), nil
}

// maxNotes bounds the per-chunk diagnoses kept in one problem's detail.
const maxNotes = 8

// readBatch is how much plaintext is read at once; a multiple of every
// chunk size, large enough for the engine's parallel path.
const readBatch = 4 << 20

// regular checks a regular file: header, every chunk, xattrs; and copies
// it out when salvaging.
func (w *walker) regular(dir *engine.InspectDir, ent entry, pl place, dest *destDir, salvName string) {
	key := inodeKey{uint64(ent.st.Dev), ent.st.Ino}
	if ent.st.Nlink > 1 {
		if first, ok := w.seen[key]; ok {
			w.notePlace(key, ent)
			if dest != nil {
				w.salv.link(w.rep, first, dest, salvName, pl)
			}
			return
		}
	}
	w.rep.Summary.Files++
	w.prog.Files++
	defer w.report(false)
	salvaged := ""
	defer func() {
		if ent.st.Nlink > 1 {
			w.seen[key] = salvaged
		}
	}()

	f, err := openReadOnly(dir, ent.backing)
	if err != nil {
		w.add(Problem{Kind: KindIO, CipherPath: pl.cipher, PlainPath: pl.plain, Detail: fmt.Sprintf("open: %v", err)})
		return
	}
	defer f.Close()
	ro := &readOnly{f: f, size: -1}
	suite := w.ins.Suite()
	st, err := engine.StatFD(int(f.Fd()))
	if err != nil {
		w.add(Problem{Kind: KindIO, CipherPath: pl.cipher, PlainPath: pl.plain, Detail: fmt.Sprintf("stat: %v", err)})
		return
	}
	hs := int64(suite.HeaderSize()) // 36 bytes, 128 with location binding
	if _, err := suite.PlainSize(st.Size); err != nil {
		// Cut inside a chunk's nonce or tag: read the whole chunks before
		// the cut (the last of them will not be marked final).
		ccs := int64(suite.CipherChunkSize())
		clipped := hs + (st.Size-hs)/ccs*ccs
		if suite.Roots() && st.Size > hs {
			// Whole chunks before the cut, with their tag blocks.
			cs := int64(suite.ChunkSize())
			n := (st.Size - hs) / ccs
			for n > 0 && suite.CipherSize(n*cs) > st.Size {
				n--
			}
			clipped = max(suite.CipherSize(n*cs), hs)
		}
		p := Problem{Kind: KindSize, CipherPath: pl.cipher, PlainPath: pl.plain}
		if ent.foreign {
			return // not ours: the foreign name is reported, the content is not EncryptFS's
		}
		if st.Size < hs {
			p.Detail = fmt.Sprintf("backing file of %d bytes is shorter than a header: no content can be decrypted", st.Size)
			w.add(p)
			return
		}
		kept, _ := suite.PlainSize(clipped)
		p.Detail = fmt.Sprintf("backing file of %d bytes ends inside a chunk's nonce or tag: the file was cut, data after plaintext byte %d is lost",
			st.Size, kept)
		w.add(p)
		ro.size = clipped
	}
	w.noteHeader(ro)
	cf, err := w.openFile(ro, ent)
	if isBadLinks(err) {
		w.badLinks(err, pl)
		return
	}
	var rootErr error
	if suite.Roots() && (err == nil || engine.IsBadRoot(err)) {
		if err != nil {
			rootErr, cf = err, nil
		}
		cf, rootErr, err = w.verifyRoot(cf, ro, ent, rootErr)
	}
	if errors.Is(err, errNoPlace) {
		return // the name is reported
	}
	if engine.IsMisplaced(err) {
		w.add(Problem{Kind: KindMisplacedFile, CipherPath: pl.cipher, PlainPath: pl.plain,
			Detail: "the file's contents are not bound to this name (moved or copied here from another name or directory): the mount answers EIO; not read"})
		return
	}
	if err != nil {
		kind := KindIO
		if engine.IsBadHeader(err) {
			if ent.foreign {
				return
			}
			kind = KindHeader
		}
		w.add(Problem{Kind: kind, CipherPath: pl.cipher, PlainPath: pl.plain,
			Detail: fmt.Sprintf("%v: no content can be decrypted, xattrs cannot be checked", err)})
		if kind == KindHeader && ro.size < 0 {
			w.planHeader(ent, pl, ro)
		}
		return
	}
	defer cf.Close()
	w.checkBindings(cf, ent, pl)
	size, _ := cf.Size()

	var out *destFile
	if dest != nil {
		out = w.salv.createFile(w.rep, dest, salvName, pl)
	}
	before := len(w.rep.Problems)
	bad := w.contents(cf, ro, size, pl, out)
	w.checkRoot(cf, ent, pl, bad > 0 || len(w.rep.Problems) > before, rootErr)
	if size > 0 {
		w.filesWithData++
		if bad > 0 {
			w.filesWithBad++
		}
	}

	var xs []plainXattr
	if id, ok := cf.ID(); ok {
		xs = w.xattrs(w.ins.Object(int(f.Fd()), id[:]), pl)
	} else {
		w.unverifiableXattrs(w.ins.Object(int(f.Fd()), nil), pl, "the file has no header to bind them to")
	}
	if out != nil {
		salvaged = out.rel
		w.salv.finishFile(w.rep, out, size, ent.st, xs)
		if bad > 0 {
			w.rep.Summary.SalvageZeroBytes += bad
		}
	}
}

// contents reads every chunk of cf, reports bad chunks and truncation, and
// writes the good plaintext to out (if not nil). It returns the number of
// plaintext bytes that were unreadable.
func (w *walker) contents(cf *engine.RawFile, ro *readOnly, size int64, pl place, out *destFile) int64 {
	cs := int64(w.ins.Suite().ChunkSize())
	batch := max(readBatch/cs, 1) * cs
	buf := make([]byte, min(batch, size))
	var ranges []Range
	var firstErr string
	var notes []string
	var badBytes int64
	emit := func(p []byte, off int64) {
		if out != nil {
			out.write(w.salv, w.rep, p, off)
		}
	}
	for off := int64(0); off < size; {
		if w.ctx.Err() != nil {
			return badBytes
		}
		n := min(batch, size-off)
		got, err := cf.ReadAt(buf[:n], off)
		if err == io.EOF && int64(got) == n {
			err = nil
		}
		emit(buf[:got], off)
		end := off + n
		// Past the good prefix, go chunk by chunk to find each bad one.
		for c := off + int64(got); err != nil && c < end; c += cs {
			clen := min(cs, size-c)
			g, cerr := cf.ReadAt(buf[:clen], c)
			if cerr == io.EOF && int64(g) == clen {
				cerr = nil
			}
			if cerr == nil {
				emit(buf[:clen], c)
				continue
			}
			if plain, note, ok := w.diagnose(cf, ro, size, c, clen); ok {
				// The file's last chunk authenticates as a middle chunk:
				// the file was cut at a chunk boundary, every byte is good.
				emit(plain, c)
				w.add(Problem{Kind: KindTruncated, CipherPath: pl.cipher, PlainPath: pl.plain, Detail: note})
				continue
			} else if note != "" && len(notes) < maxNotes {
				notes = append(notes, note)
			}
			if firstErr == "" && !engine.IsCorruptChunk(cerr) {
				firstErr = cerr.Error() // an I/O error, not a failed tag
			}
			ranges = append(ranges, Range{Start: c, End: c + clen})
			w.rep.Summary.BadChunks++
			w.rep.Summary.BadBytes += clen
			badBytes += clen
		}
		w.rep.Summary.PlainBytes += n
		w.prog.Bytes += n
		off = end
		w.report(false)
	}
	if ranges != nil {
		detail := fmt.Sprintf("%d chunk(s) failed authentication", len(ranges))
		if firstErr != "" {
			detail = fmt.Sprintf("%d chunk(s) unreadable (%s)", len(ranges), firstErr)
		}
		for _, n := range notes {
			detail += "; " + n
		}
		w.add(Problem{Kind: KindChunk, CipherPath: pl.cipher, PlainPath: pl.plain, Ranges: ranges, Detail: detail})
	}
	return badBytes
}

// diagnose looks at a chunk that failed through the engine. For the file's
// last chunk that authenticates as not final, it returns the plaintext and
// ok: the file was cut at a chunk boundary. Otherwise note may say more
// (an all-zero chunk, a final chunk in the middle of the file). It reads
// the raw chunk and opens it with the file's cipher: diagnosis only, the
// engine has already said the chunk is bad at this position.
func (w *walker) diagnose(cf *engine.RawFile, ro *readOnly, size, off, clen int64) (plain []byte, note string, ok bool) {
	suite := w.ins.Suite()
	id, has := cf.ID()
	if !has {
		return nil, "", false
	}
	fc, err := suite.File(id)
	if err != nil {
		return nil, "", false
	}
	idx := uint64(off / int64(suite.ChunkSize()))
	stored := make([]byte, clen+int64(suite.Overhead()))
	if n, err := ro.ReadAt(stored, suite.ChunkOffset(idx)); n != len(stored) {
		return nil, fmt.Sprintf("chunk %d unreadable: %v", idx, err), false
	}
	last := off+clen == size
	if engine.IsHole(stored) {
		return nil, fmt.Sprintf("chunk %d is all zero bytes where no hole is allowed", idx), false
	}
	if p, err := fc.Open(nil, stored, idx, !last); err == nil {
		if last {
			return p, fmt.Sprintf("the file ends at plaintext byte %d without its final chunk: it was cut at a chunk boundary, later data is lost", size), true
		}
		return nil, fmt.Sprintf("chunk %d is marked final but is not last: data was appended after the file's end", idx), false
	}
	return nil, "", false
}
