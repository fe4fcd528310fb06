package fresh

import (
	"bytes"
	"errors"
	"io/fs"
	"strings"

	"github.com/encryptfs/encryptfs/internal/backing"
	fc "github.com/encryptfs/encryptfs/internal/crypto/fresh"
	"golang.org/x/sys/unix"
)

// The upgrade to manifest buckets (encryptfs upgrade; docs/format.md §15,
// "Buckets"), in three crash-safe steps, each resumable by running it
// again:
//
//  1. Pack: every device's manifest files are copied, byte for byte under
//     the directory ID their name gives, into its buckets (a manifest
//     file wins over a bucket entry of the same directory: it is newer,
//     written by a mount of the old layout after an interrupted run);
//     each bucket written whole and the directory fsynced.
//  2. The config gets the flag (the caller's step): from then on only
//     buckets are read.
//  3. Unpack's leftovers are removed: each manifest file whose bytes its
//     bucket holds. A file the bucket does not hold is kept.
//
// Bytes are moved, not parsed: an entry that fails authentication stays
// as failing in its bucket as it was as a file, so the upgrade neither
// hides nor forgives a tampered manifest. No key is needed.

// PackManifests is step 1 for the vault in dir; it returns how many
// manifest files it packed.
func PackManifests(dir string) (int, error) {
	packed := 0
	err := eachManifestsDir(dir, func(mdir int) error {
		files, err := manifestFiles(mdir)
		if err != nil {
			return err
		}
		if _, err := putBuckets(mdir, files); err != nil {
			return err
		}
		packed += len(files)
		return unobserved().Fsync(mdir)
	})
	return packed, err
}

// RemovePacked is step 3: it removes every manifest file whose bytes its
// bucket holds, and returns how many it removed.
func RemovePacked(dir string) (int, error) {
	removed := 0
	err := eachManifestsDir(dir, func(mdir int) error {
		files, err := manifestFiles(mdir)
		if err != nil {
			return err
		}
		buckets := map[byte]map[[fc.IDSize]byte][]byte{}
		for id, file := range files {
			b := fc.BucketOf(id)
			if _, ok := buckets[b]; !ok {
				old, err := readBucketFile(mdir, b)
				if err != nil {
					return err
				}
				buckets[b] = map[[fc.IDSize]byte][]byte{}
				for _, e := range old {
					buckets[b][e.DirID] = e.File
				}
			}
			if held, ok := buckets[b][id]; ok && bytes.Equal(held, file) {
				if err := unobserved().Unlinkat(mdir, fc.EncodeID(id[:]), 0); err != nil && !errors.Is(err, unix.ENOENT) {
					return err
				}
				removed++
			}
		}
		if removed == 0 {
			return nil
		}
		return unobserved().Fsync(mdir)
	})
	return removed, err
}

// eachManifestsDir calls f with each device's manifests directory of the
// vault in dir (anything but a directory under such a name is skipped:
// never followed).
func eachManifestsDir(dir string, f func(mdir int) error) error {
	root, err := backing.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer backing.Close(root)
	ents, err := backing.ReadDirAt(root, "")
	if err != nil {
		return err
	}
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name, fc.ManifestsPrefix)
		if _, ok2 := fc.DecodeID(rest); !ok || !ok2 {
			continue
		}
		mdir, err := backing.OpenSubdir(root, e.Name)
		if errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
			continue
		}
		if err != nil {
			return err
		}
		err = f(mdir)
		backing.Close(mdir)
		if err != nil {
			return err
		}
	}
	return nil
}

// manifestFiles reads the manifest files of the one-file-per-directory
// layout in mdir, by the directory ID their name gives. One that is not a
// regular file or is over fc.MaxFileSize is left where it is (a reader of
// either layout finds it failing).
func manifestFiles(mdir int) (map[[fc.IDSize]byte][]byte, error) {
	ents, err := backing.ReadDir(mdir)
	if err != nil {
		return nil, err
	}
	out := map[[fc.IDSize]byte][]byte{}
	for _, e := range ents {
		id, ok := fc.DecodeID(e.Name)
		if !ok {
			continue
		}
		file, err := readSmall(mdir, e.Name)
		if errors.Is(err, fc.ErrMalformed) || errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out[[fc.IDSize]byte(id)] = file
	}
	return out, nil
}

// readBucketFile reads bucket b of mdir whole: nil if it is missing.
func readBucketFile(mdir int, b byte) ([]fc.BucketEntry, error) {
	file, err := readSmall(mdir, fc.BucketName(b))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return fc.ParseBucket(b, file)
}
