package fresh

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/encryptfs/encryptfs/internal/backing"
	fc "github.com/encryptfs/encryptfs/internal/crypto/fresh"
	"golang.org/x/sys/unix"
)

// Local state: what this client has seen of a vault, kept outside
// CIPHERDIR (an attacker who writes CIPHERDIR cannot roll it back). One
// directory per vault, named by the hex VaultID; one JSON file in it.

// stateFile is the name of the state file in a vault's state directory.
const stateFile = "state.json"

// lockFile is held (flock, exclusive) by the one writer of a state
// directory: a mount. An offline command that cannot take it only reads.
const lockFile = "lock"

// DefaultStateRoot is where state directories live when Options.StateDir
// is empty: $XDG_STATE_HOME/encryptfs, else $HOME/.local/state/encryptfs,
// else (no HOME: a system service) /var/lib/encryptfs. env is os.Getenv
// (passed in for tests).
func DefaultStateRoot(env func(string) string) string {
	if d := env("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "encryptfs")
	}
	if h := env("HOME"); filepath.IsAbs(h) {
		return filepath.Join(h, ".local", "state", "encryptfs")
	}
	return "/var/lib/encryptfs"
}

// StateDir is the state directory of the vault with ID vaultID under
// root.
func StateDir(root string, vaultID []byte) string {
	return filepath.Join(root, hex.EncodeToString(vaultID))
}

// Seen is what this client has seen of one device.
type Seen struct {
	// Epoch is the highest epoch counter seen (authentic). A lower one
	// later is a rollback.
	Epoch uint64
	// Confirmed is the highest epoch whose records this client has seen
	// in place (a whole check without issues, or accept). A record with a
	// stamp at most Confirmed that no longer holds went back; a newer one
	// may still be arriving.
	Confirmed uint64
	// Manifests is the highest counter seen of each of the device's
	// manifests (by EncodeID(dirID)).
	Manifests map[string]uint64
}

// State is the local state of one vault.
type State struct {
	// Device is this client's DeviceID (random, made on first use).
	Device []byte
	// Counter is the last counter this device used: saved before a batch
	// writes with it, so a crash never reuses one.
	Counter uint64
	// Dirty is set while a mount writes the vault and cleared by a clean
	// unmount: a mount that finds it set recovers (Recover).
	Dirty bool
	// Seen maps EncodeID(DeviceID) to what was seen of that device (this
	// one included).
	Seen map[string]*Seen
	// Pending maps each "behind" issue of the last check to when it was
	// first seen (Unix seconds): it is a rollback once older than
	// Options.Grace.
	Pending map[string]int64 `json:",omitempty"`
	// Unrecorded are the changes the last mount's batches could not
	// record (unrecorded.go): the next mount records them.
	Unrecorded []Unrecorded `json:",omitempty"`
	// Replaced keeps, per object (EncodeID of its file or directory ID),
	// the xattr digests this device recorded for it and replaced since,
	// newest last, at most maxReplaced (noteReplacedXattrs). A device
	// replaces its own record of a name in place, so without this a
	// one-device vault has no older xattr state to recognise (issue 18,
	// I2): see replacedXattrs.
	Replaced map[string][]string `json:",omitempty"`
}

// maxReplaced bounds the xattr digests kept per object in
// State.Replaced: 8 × 22 bytes of JSON an object whose xattrs changed.
// A replay of an older state than these is reported behind, and rolled
// back once it outlasts the grace period.
const maxReplaced = 8

func (s *State) seen(dev string) *Seen {
	if s.Seen == nil {
		s.Seen = map[string]*Seen{}
	}
	if s.Seen[dev] == nil {
		s.Seen[dev] = &Seen{Manifests: map[string]uint64{}}
	}
	if s.Seen[dev].Manifests == nil {
		s.Seen[dev].Manifests = map[string]uint64{}
	}
	return s.Seen[dev]
}

// loadState reads dir's state; a missing file gives a new state with a
// random DeviceID from rand when create is set (ErrNoState otherwise).
func loadState(dir string, rand io.Reader, create bool) (*State, error) {
	b, err := readLocal(dir, stateFile)
	if errors.Is(err, os.ErrNotExist) {
		if !create {
			return nil, ErrNoState
		}
		s := &State{Device: make([]byte, fc.IDSize)}
		if _, err := io.ReadFull(rand, s.Device); err != nil {
			return nil, fmt.Errorf("fresh: device ID: %w", err)
		}
		return s, nil
	}
	if err != nil {
		return nil, err
	}
	var s State
	if err := json.Unmarshal(b, &s); err != nil || len(s.Device) != fc.IDSize {
		return nil, fmt.Errorf("%w: %s", ErrBadState, filepath.Join(dir, stateFile))
	}
	return &s, nil
}

// save writes s atomically and durably (temporary file, fsync, rename,
// fsync of the directory).
func (s *State) save(dir string) error {
	b, err := json.MarshalIndent(s, "", "\t")
	if err != nil {
		return err
	}
	return writeDurable(dir, stateFile, b, 0o600)
}

// The state directory is the user's (its path is followed as given), but
// its entries are used like CIPHERDIR's, through internal/backing: no
// symlink followed, no FIFO opened, no size trusted, so that a state
// directory put somewhere shared (--state-dir) cannot be turned against
// the daemon either.

// maxStateFile bounds the state file a reader loads.
const maxStateFile = fc.MaxFileSize

// readLocal reads entry name of state directory dir.
func readLocal(dir, name string) ([]byte, error) {
	fd, err := backing.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer backing.Close(fd)
	return backing.ReadFileAt(fd, name, maxStateFile)
}

// writeDurable replaces dir/name with data: temporary file, fsync,
// rename, fsync of dir.
func writeDurable(dir, name string, data []byte, mode uint32) error {
	fd, err := backing.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer backing.Close(fd)
	return unobserved().ReplaceFile(fd, name+fc.TempSuffix, fd, name, data, mode, backing.ReplaceSyncDir)
}

// openLock opens (creating it) the lock file of state directory dir:
// a regular file, never a symlink or FIFO planted in its place.
func openLock(dir string, flags int) (*os.File, error) {
	dfd, err := backing.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer backing.Close(dfd)
	fd, err := unobserved().Openat(dfd, lockFile, flags|unix.O_NONBLOCK, 0o600)
	if err != nil {
		return nil, err
	}
	if st, err := backing.Fstat(fd); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		backing.Close(fd)
		if err == nil {
			err = fmt.Errorf("%w: %s", backing.ErrNotRegular, filepath.Join(dir, lockFile))
		}
		return nil, err
	}
	return os.NewFile(uintptr(fd), filepath.Join(dir, lockFile)), nil
}

// lockState takes dir's writer lock without waiting; ok is false if
// another process (a mount) holds it.
func lockState(dir string) (f *os.File, ok bool, err error) {
	f, err = openLock(dir, unix.O_RDWR|unix.O_CREAT)
	if err != nil {
		return nil, false, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, false, nil
		}
		return nil, false, err
	}
	return f, true, nil
}
