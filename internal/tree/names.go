package tree

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/crypto/names"
	"golang.org/x/sys/unix"
)

// Name is one plaintext entry name and how it is stored in its backing
// directory.
type Name struct {
	Plain   string // the plaintext name
	Enc     string // base64url of the encrypted name; may exceed 255 bytes
	Backing string // the entry's name in the backing directory
	Long    bool   // Backing is a long-name entry with a ".name" sidecar
	// Orig is set for a sync-conflict copy ("<encname><suffix>", shown as
	// Plain = "<orig><suffix>"): the name its encrypted part authenticates
	// as, which a symlink's target is bound to.
	Orig string
	// Bad is set for an entry whose backing name does not decrypt, shown
	// on request as Plain = Backing + BadNameSuffix (see BadName).
	Bad bool
	// altID is the conflicting directory ID an entry was decrypted under
	// (altdir.go), which its contents are bound to; nil for the others.
	altID []byte
}

// Alias reports whether Backing is not the plain encryption of Plain: a
// sync-conflict copy or an undecryptable entry. Such an entry is found
// again by its displayed name through Resolve, and is read-only
// (ErrReadOnly): it may be read, renamed to a name of its own (adopted)
// or removed.
func (n Name) Alias() bool { return n.Orig != "" || n.Bad }

// boundName is the plaintext name an entry's metadata is bound to.
func (n Name) boundName() string {
	if n.Orig != "" {
		return n.Orig
	}
	return n.Plain
}

// sidecarSize bounds a long-name sidecar: the encoded encryption of a
// 255-byte name (16 + 255 bytes, base64url) is 362 bytes.
const sidecarSize = 512

// Name encrypts plain for the directory dirID. The plaintext name is checked
// (names.ErrInvalidName, names.ErrNameTooLong).
func (t *Tree) Name(dirID []byte, plain string) (Name, error) {
	if err := names.Validate(plain); err != nil {
		return Name{}, err
	}
	enc, err := t.ep.namesToEncrypt(dirID).Encrypt(dirID, plain)
	if err != nil {
		return Name{}, err
	}
	b, long := names.Backing(enc)
	return Name{Plain: plain, Enc: enc, Backing: b, Long: long}, nil
}

// writeSidecar creates the long-name sidecar of n in dirfd (nothing for a
// short name). created reports whether this call made it, so that a failed
// create can remove it again; an existing sidecar with the right content is
// accepted (it belongs to an existing entry of the same name).
//
// A sidecar it writes is durable when it returns (the file and dirfd are
// fsynced): the entry the caller makes next must never outlive a crash
// without it, since nothing else holds the encrypted name that the
// entry's hashed name stands for (a long name without its sidecar is lost
// for good). Found by internal/crashsim's replay ("untar": create and
// mkdir of a long name, "renames": rename to a long name); it costs one
// directory fsync per new long name.
func (t *Tree) writeSidecar(dirfd int, n Name) (created bool, err error) {
	if !n.Long {
		return false, nil
	}
	side := names.SidecarName(n.Backing)
	err = t.fs.WriteFileAt(dirfd, side, []byte(n.Enc), 0o400)
	if err == nil {
		return true, t.syncSidecar(dirfd, n)
	}
	if !errors.Is(err, unix.EEXIST) {
		return false, fmt.Errorf("tree: write long-name sidecar: %w", err)
	}
	old, rerr := backing.ReadFileAt(dirfd, side, sidecarSize)
	if rerr == nil && bytes.Equal(old, []byte(n.Enc)) {
		return false, nil
	}
	// A stale or damaged sidecar: replace it (its hash-named entry can only
	// ever belong to this encname).
	if err := t.fs.Unlinkat(dirfd, side, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return false, err
	}
	if err := t.fs.WriteFileAt(dirfd, side, []byte(n.Enc), 0o400); err != nil {
		return false, fmt.Errorf("tree: write long-name sidecar: %w", err)
	}
	return true, t.syncSidecar(dirfd, n)
}

// syncSidecar makes the sidecar writeSidecar just wrote durable (its data
// is already: WriteFileAt fsyncs the file); on failure it removes it.
func (t *Tree) syncSidecar(dirfd int, n Name) error {
	if err := t.fs.Fsync(dirfd); err != nil {
		t.removeSidecar(dirfd, n)
		return fmt.Errorf("tree: write long-name sidecar: %w", err)
	}
	return nil
}

// removeEntrySidecar removes n's long-name sidecar after its entry was
// removed from or renamed out of dirfd; entryDir is the directory whose
// fsync makes that removal durable (dirfd, or a rename's target). The
// fsync comes first: if the sidecar's removal survived a crash that the
// entry's did not, the entry's name would be lost for good (found by
// internal/crashsim's replay: "untar" remove, "renames" rename of a long
// name). Costs one directory fsync per long name removed.
func (t *Tree) removeEntrySidecar(dirfd int, n Name, entryDir int) error {
	if !n.Long {
		return nil
	}
	if err := t.fs.Fsync(entryDir); err != nil {
		return err
	}
	return t.removeSidecar(dirfd, n)
}

// removeSidecar removes the long-name sidecar of n (nothing for a short
// name; a missing sidecar is not an error).
func (t *Tree) removeSidecar(dirfd int, n Name) error {
	if !n.Long {
		return nil
	}
	err := t.fs.Unlinkat(dirfd, names.SidecarName(n.Backing), 0)
	if err != nil && !errors.Is(err, unix.ENOENT) {
		return err
	}
	return nil
}

// Entry is one decrypted directory entry.
type Entry struct {
	Name Name
	Ino  uint64 // backing inode number
	Type uint8  // unix.DT_*, as getdents reported it (may be DT_UNKNOWN)
}

// BadEntry is a backing entry whose name did not decrypt: foreign files,
// sync-conflict copies, tampered names, long names with a missing or wrong
// sidecar. Listing reports them so that nothing vanishes silently.
type BadEntry struct {
	Backing string
	Err     error
	Ino     uint64 // backing inode number
	Type    uint8  // unix.DT_*, as getdents reported it
}

// BadNameSuffix marks an undecryptable entry in a listing that shows them
// (mount --show-undecryptable): "<backing name>.encryptfs-bad-name". A
// suffix, as gocryptfs's -badname uses, keeps related names together.
const BadNameSuffix = ".encryptfs-bad-name"

// BadName is the Name under which backing entry b, whose name does not
// decrypt, is shown; ok is false if the displayed name would be longer
// than a file name may be.
func BadName(b string) (n Name, ok bool) {
	plain := b + BadNameSuffix
	if names.Validate(plain) != nil {
		return Name{}, false
	}
	return Name{Plain: plain, Backing: b, Bad: true}, true
}

// DecryptName decrypts one backing name of directory d, reading and
// checking its sidecar if it is a long name.
func (t *Tree) DecryptName(d Dir, backingName string) (Name, error) {
	enc := backingName
	long := names.IsLongName(backingName)
	if long {
		side, err := backing.ReadFileAt(d.fd, names.SidecarName(backingName), sidecarSize)
		if err != nil {
			return Name{}, fmt.Errorf("%w: long-name sidecar: %v", names.ErrBadName, err)
		}
		if enc, err = names.CheckSidecar(backingName, side); err != nil {
			return Name{}, err
		}
	}
	plain, err := t.ep.namesOf(d.id).Decrypt(d.id, enc)
	if err != nil && !long {
		if n, ferr := t.decryptForeign(d, backingName); ferr == nil {
			return n, nil
		}
	}
	if err != nil {
		return Name{}, err
	}
	return Name{Plain: plain, Enc: enc, Backing: backingName, Long: long}, nil
}

// decryptForeign decrypts a sync-conflict copy (docs/format.md §6.4):
// "<encname><suffix>", or a copy of a long-name entry (see
// names.SplitLongForeign), whose name is in the original's sidecar. The
// suffix must be one of the sync tools' patterns (names.IsConflictSuffix).
// It is shown as "<plain><suffix>" only if the encrypted name
// authenticates in this directory.
func (t *Tree) decryptForeign(d Dir, backingName string) (Name, error) {
	var enc, suffix string
	if long, sfx, ok := names.SplitLongForeign(backingName); ok {
		side, err := backing.ReadFileAt(d.fd, names.SidecarName(long), sidecarSize)
		if err != nil {
			return Name{}, fmt.Errorf("%w: long-name sidecar: %v", names.ErrBadName, err)
		}
		if enc, err = names.CheckSidecar(long, side); err != nil {
			return Name{}, err
		}
		suffix = sfx
	} else if enc, suffix, ok = names.SplitForeign(backingName); !ok {
		return Name{}, names.ErrBadName
	}
	plain, err := t.ep.namesOf(d.id).Decrypt(d.id, enc)
	if err != nil {
		return Name{}, err
	}
	full := plain + suffix
	if err := names.Validate(full); err != nil {
		return Name{}, fmt.Errorf("%w: %w", names.ErrBadName, err)
	}
	return Name{Plain: full, Enc: enc, Backing: backingName, Orig: plain}, nil
}

// IsLongCopy reports whether backing name b is a copy of a long-name entry
// made by another program (names.SplitLongForeign).
func IsLongCopy(b string) bool {
	_, _, ok := names.SplitLongForeign(b)
	return ok
}
