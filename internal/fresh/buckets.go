package fresh

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"sync"

	"github.com/encryptfs/encryptfs/internal/backing"
	fc "github.com/encryptfs/encryptfs/internal/crypto/fresh"
	"golang.org/x/sys/unix"
)

// Manifest buckets (Options.Buckets, feature flag "ManifestBuckets";
// docs/format.md §15, "Buckets"): a device's manifests packed by the
// first byte of the directory ID into at most 256 files. A reader finds
// one manifest by its bucket's table, read once per version of the
// bucket (bucketTables), and one pread; a batch stages what it writes
// (stageManifest) and rewrites each bucket it touched once, before the
// epoch that commits to them (flushBuckets).

// bucketKey names one bucket of one device.
type bucketKey struct {
	dev [fc.IDSize]byte
	b   byte
}

// bucketTable is a bucket's table as read from one version of its file,
// told apart from the next version by its inode, size and times (a
// bucket is only ever replaced by a rename, or, by a sync tool, written
// in place, which moves its ctime).
type bucketTable struct {
	ino, dev   uint64
	size       int64
	mtim, ctim unix.Timespec
	slots      []fc.BucketSlot
}

func (t *bucketTable) is(st *unix.Stat_t) bool {
	return t.ino == st.Ino && t.dev == st.Dev && t.size == st.Size && t.mtim == st.Mtim && t.ctim == st.Ctim
}

// bucketTables keeps the tables read, so that reading a directory's
// manifest costs an open, an fstat and one pread, as a file of its own
// did, not a read of the whole bucket. What it holds is 20 bytes per
// directory of each device (the table), the same order as the local
// state's counters per directory.
type bucketTables struct {
	mu    sync.Mutex
	m     map[bucketKey]*bucketTable
	slots int // held in m
}

// maxCachedSlots bounds what bucketTables holds (32 bytes a slot: 32 MiB
// at most): a real vault's tables are 20 bytes per directory and device,
// but buckets planted in CIPHERDIR under many device names could
// otherwise make a mount keep 64 MiB tables by the hundred. Beyond it
// the cache starts over; reads stay correct, only slower.
const maxCachedSlots = 1 << 20

func (c *bucketTables) get(k bucketKey, st *unix.Stat_t) []fc.BucketSlot {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t := c.m[k]; t != nil && t.is(st) {
		return t.slots
	}
	return nil
}

func (c *bucketTables) put(k bucketKey, st *unix.Stat_t, slots []fc.BucketSlot) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || c.slots+len(slots) > maxCachedSlots {
		c.m, c.slots = map[bucketKey]*bucketTable{}, 0
	}
	if old := c.m[k]; old != nil {
		c.slots -= len(old.slots)
	}
	c.slots += len(slots)
	c.m[k] = &bucketTable{ino: st.Ino, dev: st.Dev, size: st.Size, mtim: st.Mtim, ctim: st.Ctim, slots: slots}
}

// readBucketed returns the bytes of device dev's manifest of dirID from
// its bucket: fs.ErrNotExist if the bucket or its entry is missing,
// fc.ErrMalformed if the bucket does not parse.
func (v *Vault) readBucketed(dev, dirID [fc.IDSize]byte) ([]byte, error) {
	dir, err := backing.OpenSubdir(v.root, manifestsDir(dev))
	if err != nil {
		return nil, err
	}
	defer backing.Close(dir)
	b := fc.BucketOf(dirID)
	name := fc.BucketName(b)
	fd, st, err := backing.OpenRegular(dir, name, unix.O_RDONLY|unix.O_NONBLOCK)
	if errors.Is(err, backing.ErrNotRegular) || errors.Is(err, unix.ELOOP) {
		return nil, fmt.Errorf("%w: %s", fc.ErrMalformed, name)
	}
	if err != nil {
		return nil, err
	}
	f := backing.NewFile(fd, &st)
	defer f.Close()
	k := bucketKey{dev, b}
	slots := v.tables.get(k, &st)
	if slots == nil {
		if slots, err = readBucketTable(f, b, st.Size); err != nil {
			return nil, fmt.Errorf("%w: %s", err, name)
		}
		v.tables.put(k, &st, slots)
	}
	s, ok := fc.FindSlot(slots, dirID)
	if !ok {
		return nil, fs.ErrNotExist
	}
	out := make([]byte, s.Len) // bounded: the table was checked against the file's size
	if _, err := f.ReadAt(out, s.Off); err != nil {
		if errors.Is(err, io.EOF) {
			err = fc.ErrMalformed // shorter than its table says: changed under us
		}
		return nil, err
	}
	return out, nil
}

// readBucketTable reads and checks bucket b's table from f, a file of
// size bytes (fstat's: a size or count from CIPHERDIR sizes nothing
// before it is checked against it).
func readBucketTable(f *backing.File, b byte, size int64) ([]fc.BucketSlot, error) {
	if size > fc.MaxFileSize {
		return nil, fc.ErrMalformed
	}
	head := make([]byte, fc.BucketHeadSize)
	if _, err := f.ReadAt(head, 0); err != nil {
		return nil, fc.ErrMalformed
	}
	n, err := fc.ParseBucketHead(head, size)
	if err != nil {
		return nil, err
	}
	table := make([]byte, n*fc.BucketSlotSize)
	if _, err := f.ReadAt(table, fc.BucketHeadSize); err != nil {
		return nil, fc.ErrMalformed
	}
	return fc.ParseBucketTable(b, table, n, size)
}

// ownManifestFiles reads this device's manifests, in either layout, by
// directory ID: each file once, or each bucket once (not an entry at a
// time through its table).
func (v *Vault) ownManifestFiles() map[[fc.IDSize]byte][]byte {
	out := map[[fc.IDSize]byte][]byte{}
	ents, _ := backing.ReadDirAt(v.root, manifestsDir(v.self))
	for _, e := range ents {
		if !v.o.Buckets {
			if id, ok := fc.DecodeID(e.Name); ok {
				if b, err := v.readManifestFile(v.self, [fc.IDSize]byte(id)); err == nil {
					out[[fc.IDSize]byte(id)] = b
				}
			}
			continue
		}
		b, ok := fc.ParseBucketName(e.Name)
		if !ok {
			continue
		}
		entries, err := v.readOwnBucket(b)
		if err != nil {
			continue
		}
		for _, en := range entries {
			out[en.DirID] = en.File
		}
	}
	return out
}

// readOwnBucket reads this device's bucket b whole; a missing one is
// empty.
func (v *Vault) readOwnBucket(b byte) ([]fc.BucketEntry, error) {
	dir, err := backing.OpenSubdir(v.root, manifestsDir(v.self))
	if err != nil {
		return nil, err
	}
	defer backing.Close(dir)
	return readBucketFile(dir, b)
}

// stageManifest keeps manifest file (of directory dirID) for the batch's
// flushBuckets. Only a batch calls it, under batchMu.
func (v *Vault) stageManifest(dirID [fc.IDSize]byte, file []byte) {
	if v.staged == nil {
		v.staged = map[[fc.IDSize]byte][]byte{}
	}
	v.staged[dirID] = file
}

// flushBuckets writes every bucket the batch staged a manifest in
// (putBuckets). Staged entries are dropped whatever happens: a failed
// batch is taken again whole (batch's requeue).
func (v *Vault) flushBuckets() error {
	staged := v.staged
	v.staged = nil
	if len(staged) == 0 {
		return nil
	}
	dir, err := v.openOwnManifests()
	if err != nil {
		return err
	}
	defer backing.Close(dir)
	_, err = putBuckets(dir, staged)
	return err
}

// putBuckets writes files (manifest files by directory ID) into their
// buckets in mdir: each bucket's other entries as they are, files
// replacing or joining them, each bucket written whole (temporary file,
// fsync, rename; the directory fsync is the caller's). It returns how
// many buckets it wrote. An entry of a bucket that no longer parses (one
// edited in CIPHERDIR) is lost with it, as the edited file was: an epoch
// that commits to it still does, so the next check reports it; refusing
// instead would stop every later batch of the mount.
func putBuckets(mdir int, files map[[fc.IDSize]byte][]byte) (int, error) {
	byBucket := map[byte][]fc.BucketEntry{}
	for id, file := range files {
		b := fc.BucketOf(id)
		byBucket[b] = append(byBucket[b], fc.BucketEntry{DirID: id, File: file})
	}
	buckets := make([]byte, 0, len(byBucket))
	for b := range byBucket {
		buckets = append(buckets, b)
	}
	slices.Sort(buckets)
	for _, b := range buckets {
		old, _ := readBucketFile(mdir, b)
		entries := byBucket[b]
		for _, e := range old {
			if _, ok := files[e.DirID]; !ok {
				entries = append(entries, e)
			}
		}
		file, err := fc.MarshalBucket(b, entries)
		if err != nil {
			return 0, err
		}
		name := fc.BucketName(b)
		if err := unobserved().ReplaceFile(mdir, name+fc.TempSuffix, mdir, name, file, 0o600, 0); err != nil {
			return 0, err
		}
	}
	return len(buckets), nil
}
