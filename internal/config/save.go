package config

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Load reads and parses dir/encryptfs.conf.
func Load(dir string) (*Config, error) {
	f, err := os.Open(filepath.Join(dir, FileName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, dir)
	}
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return Parse(data)
}

// Marshal encodes the config as stored (indented JSON, trailing newline).
// The Params value is written as the exact bytes that were parsed or
// wrapped, because they are the key wrap's associated data.
func (c *Config) Marshal() ([]byte, error) {
	if len(c.rawParams) == 0 {
		return nil, errors.New("config: marshal: no stored Params (make configs with Create or Parse)")
	}
	// Params edited in memory without Rewrap would be silently dropped;
	// refuse instead.
	var stored Params
	if err := decodeStrict(c.rawParams, &stored); err != nil {
		return nil, fmt.Errorf("config: marshal: %w", err)
	}
	a, errA := json.Marshal(stored)
	b, errB := json.Marshal(c.Params)
	if errA != nil || errB != nil || !bytes.Equal(a, b) {
		return nil, errors.New("config: marshal: Params changed in memory without Rewrap")
	}
	creator, err := json.Marshal(c.Creator)
	if err != nil {
		return nil, fmt.Errorf("config: marshal: %w", err)
	}
	var buf bytes.Buffer
	buf.WriteString("{\n\t\"Creator\": ")
	buf.Write(creator)
	buf.WriteString(",\n\t\"Params\": ")
	buf.Write(c.rawParams)
	buf.WriteString(",\n\t\"EncryptedKey\": \"")
	buf.WriteString(base64.StdEncoding.EncodeToString(c.EncryptedKey))
	buf.WriteString("\"\n}\n")
	return buf.Bytes(), nil
}

// Save writes dir/encryptfs.conf atomically (temp, fsync, rename, fsync dir),
// mode 0400.
func (c *Config) Save(dir string) error {
	data, err := c.Marshal()
	if err != nil {
		return err
	}
	return WriteFileAtomic(dir, FileName, data)
}

// Backup copies dir/encryptfs.conf to dir/encryptfs.conf.bak atomically, so
// passwd can always be undone by renaming the backup back.
func Backup(dir string) error {
	data, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		return fmt.Errorf("config: backup: %w", err)
	}
	return WriteFileAtomic(dir, BackupName, data)
}

// WriteFileAtomic writes dir/name with mode 0400 so that a crash leaves
// either the old or the new file, never a mix: name+".tmp" is created with
// O_EXCL (a leftover temp file from an interrupted write is reported, not
// overwritten), written, fsynced, renamed over name, and dir is fsynced.
func WriteFileAtomic(dir, name string, data []byte) error {
	final := filepath.Join(dir, name)
	tmp := final + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o400)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("config: %s exists (an earlier write was interrupted); check it and remove it: %w", tmp, err)
		}
		return fmt.Errorf("config: %w", err)
	}
	if err := writeSync(f, data); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("config: %w", err) // names tmp already
	}
	if err := os.Rename(tmp, final); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("config: %w", err)
	}
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
