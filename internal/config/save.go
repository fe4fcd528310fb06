package config

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/encryptfs/encryptfs/internal/backing"
	"golang.org/x/sys/unix"
)

// Marshal encodes the config as stored (indented JSON, trailing newline).
// The Params value is written as the exact bytes that were parsed or
// wrapped, because they are the key wrap's associated data.
func (c *Config) Marshal() ([]byte, error) {
	if c.IsV2() {
		return c.marshalV2()
	}
	if len(c.rawParams) == 0 {
		return nil, errors.New("config: marshal: no stored Params (make configs with Create or Parse)")
	}
	// Params edited in memory without Rewrap would be silently dropped;
	// refuse instead.
	var stored Params
	if err := decodeStrict(c.rawParams, &stored); err != nil {
		return nil, fmt.Errorf("config: marshal: %w", err)
	}
	if !c.paramsAre(stored) {
		return nil, errors.New("config: marshal: Params changed in memory without Rewrap")
	}
	return c.layout(func(buf *bytes.Buffer) {
		buf.WriteString(",\n\t\"EncryptedKey\": \"")
		buf.WriteString(base64.StdEncoding.EncodeToString(c.EncryptedKey))
		buf.WriteString("\"")
	})
}

// paramsAre reports whether c.Params still encodes as stored, the Params
// decoded from the stored bytes: an edit in memory that the stored bytes
// (the wrap's associated data) do not carry would be silently dropped.
func (c *Config) paramsAre(stored any) bool {
	a, errA := json.Marshal(stored)
	b, errB := json.Marshal(c.Params)
	return errA == nil && errB == nil && bytes.Equal(a, b)
}

// layout writes the stored form of both versions: Creator, the exact
// Params bytes, then what rest adds (the wrapped key, or the slots and
// the MAC), as indented JSON with a trailing newline.
func (c *Config) layout(rest func(*bytes.Buffer)) ([]byte, error) {
	creator, err := json.Marshal(c.Creator)
	if err != nil {
		return nil, fmt.Errorf("config: marshal: %w", err)
	}
	var buf bytes.Buffer
	buf.WriteString("{\n\t\"Creator\": ")
	buf.Write(creator)
	buf.WriteString(",\n\t\"Params\": ")
	buf.Write(c.rawParams)
	rest(&buf)
	buf.WriteString("\n}\n")
	return buf.Bytes(), nil
}

// Save writes dir/encryptfs.conf atomically (temp, fsync, rename, fsync dir),
// mode 0400.
func (c *Config) Save(dir string) error { return c.SaveFS(nil, dir) }

// SaveFS is Save making its changes through fsys (nil: unobserved; see
// backing.FS), so that a test can record them.
func (c *Config) SaveFS(fsys *backing.FS, dir string) error {
	data, err := c.Marshal()
	if err != nil {
		return err
	}
	return WriteFileAtomicFS(fsys, dir, FileName, data)
}

// WriteBackup writes data (the previous config, as Marshal returns it) to
// path, which must not exist yet: created with O_EXCL (so it neither
// overwrites a file nor follows a symlink planted there), mode 0400,
// fsynced with its directory. passwd calls it only when the user asks for a
// backup, and never inside CIPHERDIR (docs/cli.md, passwd): a copy of the
// old config in a synced directory would keep the old password working.
func WriteBackup(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, 0o400)
	if err != nil {
		return fmt.Errorf("config: backup: %w", err)
	}
	if err := writeSync(f, data); err != nil {
		os.Remove(path)
		return fmt.Errorf("config: backup: %w", err)
	}
	return syncDir(filepath.Dir(path))
}

// WriteFileAtomic writes dir/name with mode 0400 so that a crash leaves
// either the old or the new file, never a mix: name+".tmp" is created with
// O_EXCL (a leftover temp file from an interrupted write is reported, not
// overwritten), written, fsynced, renamed over name, and dir is fsynced.
// Nothing planted in dir is followed: O_EXCL and O_NOFOLLOW refuse a
// symlink at the temp name, and rename replaces a symlink at name instead
// of writing through it.
func WriteFileAtomic(dir, name string, data []byte) error {
	return WriteFileAtomicFS(nil, dir, name, data)
}

// WriteFileAtomicFS is WriteFileAtomic making its changes through fsys
// (nil: unobserved; see backing.FS), by backing's one atomic replace
// (backing.FS.ReplaceFile) beneath dir's fd, a leftover temp file kept.
func WriteFileAtomicFS(fsys *backing.FS, dir, name string, data []byte) error {
	tmp := name + ".tmp"
	dirfd, err := backing.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	defer backing.Close(dirfd)
	err = fsys.ReplaceFile(dirfd, tmp, dirfd, name, data, 0o400, backing.ReplaceKeepLeftover|backing.ReplaceSyncDir)
	switch {
	case errors.Is(err, unix.EEXIST):
		return fmt.Errorf("config: %s exists (an earlier write was interrupted); check it and remove it: %w",
			filepath.Join(dir, tmp), fs.ErrExist)
	case err != nil:
		return fmt.Errorf("config: write %s: %w", filepath.Join(dir, tmp), err)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("config: fsync dir: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("config: fsync dir %s: %w", dir, err)
	}
	return nil
}

func writeSync(f *os.File, data []byte) error {
	_, werr := f.Write(data)
	serr := f.Sync()
	cerr := f.Close()
	return errors.Join(werr, serr, cerr)
}
