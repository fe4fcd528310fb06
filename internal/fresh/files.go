package fresh

import (
	"errors"
	"fmt"
	"strings"

	"github.com/encryptfs/encryptfs/internal/backing"
	fc "github.com/encryptfs/encryptfs/internal/crypto/fresh"
	"golang.org/x/sys/unix"
)

// The freshness files in CIPHERDIR (format.md §15). They are not part of
// the plaintext tree, so they are written through the free functions of
// internal/backing, not the session's backing FS (crash replay models
// the vault's changes, not freshness's records); but like every file of CIPHERDIR they are reached from the
// root's fd beneath it, with no symlink followed and no FIFO opened: a
// sync peer or a cloud provider writes CIPHERDIR, and the daemon often
// runs as root.

func epochName(dev [fc.IDSize]byte) string { return fc.EpochPrefix + fc.EncodeID(dev[:]) }

func manifestsDir(dev [fc.IDSize]byte) string { return fc.ManifestsPrefix + fc.EncodeID(dev[:]) }

// epochFile is one device's epoch as found: parsed, or the error.
type epochFile struct {
	epoch *fc.Epoch
	err   error // fc.ErrTampered, fc.ErrMalformed, a read error
}

// readEpochs reads every device's epoch file in the root.
func (v *Vault) readEpochs() (map[[fc.IDSize]byte]epochFile, error) {
	ents, err := backing.ReadDirAt(v.root, "")
	if err != nil {
		return nil, err
	}
	out := map[[fc.IDSize]byte]epochFile{}
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name, fc.EpochPrefix)
		id, ok2 := fc.DecodeID(rest)
		if !ok || !ok2 {
			continue
		}
		dev := [fc.IDSize]byte(id)
		b, err := readSmall(v.root, e.Name)
		var ep *fc.Epoch
		if err == nil {
			ep, err = v.keyed.ParseEpoch(b)
		}
		if err == nil && ep.Device != dev {
			ep, err = nil, fc.ErrTampered // another device's epoch under this name
		}
		out[dev] = epochFile{epoch: ep, err: err}
	}
	return out, nil
}

// devices lists the devices that have a manifests directory.
func (v *Vault) devices() ([][fc.IDSize]byte, error) {
	ents, err := backing.ReadDirAt(v.root, "")
	if err != nil {
		return nil, err
	}
	var out [][fc.IDSize]byte
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name, fc.ManifestsPrefix)
		if id, ok2 := fc.DecodeID(rest); ok && ok2 && (e.Type == unix.DT_DIR || e.Type == unix.DT_UNKNOWN) {
			out = append(out, [fc.IDSize]byte(id))
		}
	}
	return out, nil
}

// manifestFile is one manifest as found.
type manifestFile struct {
	m    *fc.Manifest
	hash [fc.HashSize]byte
	err  error // os.ErrNotExist if absent
}

// readManifest reads device dev's manifest of directory dirID.
func (v *Vault) readManifest(dev, dirID [fc.IDSize]byte) manifestFile {
	b, err := v.readManifestFile(dev, dirID)
	if err != nil {
		return manifestFile{err: err}
	}
	return v.manifestOf(dev, dirID, b)
}

// manifestOf verifies and parses b, found as device dev's manifest of
// directory dirID.
func (v *Vault) manifestOf(dev, dirID [fc.IDSize]byte, b []byte) manifestFile {
	m, err := v.keyed.ParseManifest(b)
	if err == nil && (m.Device != dev || m.DirID != dirID) {
		// Authentic, but another directory's or device's: a copy.
		m, err = nil, fc.ErrTampered
	}
	return manifestFile{m: m, hash: fc.Hash(b), err: err}
}

// readManifestFile reads the bytes of device dev's manifest of dirID,
// from its bucket or from its file.
func (v *Vault) readManifestFile(dev, dirID [fc.IDSize]byte) ([]byte, error) {
	if v.o.Buckets {
		return v.readBucketed(dev, dirID)
	}
	dir, err := backing.OpenSubdir(v.root, manifestsDir(dev))
	if err != nil {
		return nil, err
	}
	defer backing.Close(dir)
	return readSmall(dir, fc.EncodeID(dirID[:]))
}

// dirRecords reads every device's manifest of dirID (the ones that are
// missing or fail authentication are left out).
func (v *Vault) dirRecords(devs [][fc.IDSize]byte, dirID [fc.IDSize]byte) dirRecords {
	out := dirRecords{}
	for _, d := range devs {
		if mf := v.readManifest(d, dirID); mf.err == nil {
			out[d] = mf.m
		}
	}
	return out
}

// unobserved makes freshness's own changes (its manifests and epochs in
// CIPHERDIR, its state directory outside it): a nil *backing.FS, which
// reports nothing. Freshness is told the vault's changes by the engine
// (told.go), not its own records, and crash replay models the vault's
// changes, not freshness's records.
func unobserved() *backing.FS { return nil }

// openOwnManifests opens this device's manifests directory, creating it
// if missing. Anything but a directory in its place (a symlink planted to
// send the writes elsewhere, a file) is refused, never followed.
func (v *Vault) openOwnManifests() (int, error) {
	name := manifestsDir(v.self)
	if err := unobserved().Mkdirat(v.root, name, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
		return -1, err
	}
	return backing.OpenSubdir(v.root, name)
}

// writeManifest writes this device's manifest durably except for the
// directory fsync (one per batch, in writeEpoch) and returns its hash.
// With buckets it is staged, and written by the batch's flushBuckets.
func (v *Vault) writeManifest(m *fc.Manifest) ([fc.HashSize]byte, error) {
	b, err := v.keyed.MarshalManifest(m)
	if err != nil {
		return [fc.HashSize]byte{}, err
	}
	if v.o.Buckets {
		v.stageManifest(m.DirID, b)
		return fc.Hash(b), nil
	}
	dir, err := v.openOwnManifests()
	if err != nil {
		return [fc.HashSize]byte{}, err
	}
	defer backing.Close(dir)
	name := fc.EncodeID(m.DirID[:])
	if err := unobserved().ReplaceFile(dir, name+fc.TempSuffix, dir, name, b, 0o600, 0); err != nil {
		return [fc.HashSize]byte{}, err
	}
	return fc.Hash(b), nil
}

// writeEpoch writes this device's epoch durably: written in the manifests
// directory, renamed into the root, root fsynced.
func (v *Vault) writeEpoch(e *fc.Epoch) error {
	b, err := v.keyed.MarshalEpoch(e)
	if err != nil {
		return err
	}
	dir, err := v.openOwnManifests()
	if err != nil {
		return err
	}
	defer backing.Close(dir)
	// The epoch is written in the manifests directory and moved into the
	// root, so that the root never holds a temporary file a sync tool
	// would upload; the manifests renamed before it are made durable
	// first (the epoch commits to them).
	if err := unobserved().Fsync(dir); err != nil {
		return err
	}
	return unobserved().ReplaceFile(dir, "epoch"+fc.TempSuffix, v.root, epochName(v.self), b, 0o600, backing.ReplaceSyncDir)
}

// readSmall reads a freshness file of dirfd through internal/backing (no
// symlink followed, no FIFO opened), refusing one over fc.MaxFileSize and
// anything but a regular file as malformed.
func readSmall(dirfd int, name string) ([]byte, error) {
	b, err := backing.ReadFileAt(dirfd, name, fc.MaxFileSize)
	if errors.Is(err, backing.ErrNotRegular) || errors.Is(err, backing.ErrTooBig) || errors.Is(err, unix.ELOOP) {
		return nil, fmt.Errorf("%w: %s", fc.ErrMalformed, name)
	}
	return b, err
}
