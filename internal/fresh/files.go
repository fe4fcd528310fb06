package fresh

import (
	"errors"
	"os"
	"path/filepath"
	"strings"

	fc "github.com/encryptfs/encryptfs/internal/crypto/fresh"
)

// The freshness files in CIPHERDIR (format.md §15), read and written with
// plain os calls: they are not part of the plaintext tree, so they stay
// out of the observed backing FS (and the writer never observes itself).

func epochName(dev [fc.IDSize]byte) string { return fc.EpochPrefix + fc.EncodeID(dev[:]) }

func manifestsDir(dev [fc.IDSize]byte) string { return fc.ManifestsPrefix + fc.EncodeID(dev[:]) }

// epochFile is one device's epoch as found: parsed, or the error.
type epochFile struct {
	epoch *fc.Epoch
	err   error // fc.ErrTampered, fc.ErrMalformed, a read error
}

// readEpochs reads every device's epoch file in the root.
func (v *Vault) readEpochs() (map[[fc.IDSize]byte]epochFile, error) {
	ents, err := os.ReadDir(v.dir)
	if err != nil {
		return nil, err
	}
	out := map[[fc.IDSize]byte]epochFile{}
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), fc.EpochPrefix)
		id, ok2 := fc.DecodeID(rest)
		if !ok || !ok2 {
			continue
		}
		dev := [fc.IDSize]byte(id)
		b, err := readSmall(filepath.Join(v.dir, e.Name()))
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
	ents, err := os.ReadDir(v.dir)
	if err != nil {
		return nil, err
	}
	var out [][fc.IDSize]byte
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), fc.ManifestsPrefix)
		if id, ok2 := fc.DecodeID(rest); ok && ok2 && e.IsDir() {
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
	b, err := readSmall(filepath.Join(v.dir, manifestsDir(dev), fc.EncodeID(dirID[:])))
	if err != nil {
		return manifestFile{err: err}
	}
	m, err := v.keyed.ParseManifest(b)
	if err == nil && (m.Device != dev || m.DirID != dirID) {
		// Authentic, but another directory's or device's: a copy.
		m, err = nil, fc.ErrTampered
	}
	return manifestFile{m: m, hash: fc.Hash(b), err: err}
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

// writeManifest writes this device's manifest durably except for the
// directory fsync (one per batch, syncManifests) and returns its hash.
func (v *Vault) writeManifest(m *fc.Manifest) ([fc.HashSize]byte, error) {
	b, err := v.keyed.MarshalManifest(m)
	if err != nil {
		return [fc.HashSize]byte{}, err
	}
	dir := filepath.Join(v.dir, manifestsDir(v.self))
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return [fc.HashSize]byte{}, err
	}
	name := fc.EncodeID(m.DirID[:])
	tmp := filepath.Join(dir, name+fc.TempSuffix)
	if err := writeSynced(tmp, b, 0o600); err != nil {
		return [fc.HashSize]byte{}, err
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
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
	dir := filepath.Join(v.dir, manifestsDir(v.self))
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	tmp := filepath.Join(dir, "epoch"+fc.TempSuffix)
	if err := writeSynced(tmp, b, 0o600); err != nil {
		return err
	}
	if err := syncDir(dir); err != nil { // the manifests renamed before it
		return err
	}
	if err := os.Rename(tmp, filepath.Join(v.dir, epochName(v.self))); err != nil {
		return err
	}
	return syncDir(v.dir)
}

// writeSynced writes b to path (created with mode, or truncated) and
// fsyncs it; the caller renames it into place.
func writeSynced(path string, b []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// readSmall reads a freshness file, refusing one over fc.MaxFileSize and
// anything but a regular file.
func readSmall(path string) ([]byte, error) {
	st, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() || st.Size() > fc.MaxFileSize {
		return nil, fc.ErrMalformed
	}
	return os.ReadFile(path)
}
