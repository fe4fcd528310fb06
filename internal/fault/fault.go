// Package fault classifies the errors of every layer below the FUSE
// frontends and the CLI into a few kinds (not found, corrupt, wrong
// password, ...). It is the one place that knows which sentinel means what:
// the FUSE layer's errnos (internal/forwardfs), the vault package's errors and the
// CLI's exit codes are all derived from Of, so a damaged vault reads as
// damaged through every door.
//
// It sits just above internal/tree and imports the packages that hold the
// sentinels; the layers above tree (vault, fsck) mark their own sentinels
// with New so that Of sees them without an import cycle.
package fault

import (
	"errors"
	"io/fs"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/crypto/bind"
	"github.com/encryptfs/encryptfs/internal/crypto/content"
	freshcrypto "github.com/encryptfs/encryptfs/internal/crypto/fresh"
	"github.com/encryptfs/encryptfs/internal/crypto/kdf"
	"github.com/encryptfs/encryptfs/internal/crypto/meta"
	"github.com/encryptfs/encryptfs/internal/crypto/names"
	"github.com/encryptfs/encryptfs/internal/crypto/siv"
	"github.com/encryptfs/encryptfs/internal/fileengine"
	"github.com/encryptfs/encryptfs/internal/keyslot"
	"github.com/encryptfs/encryptfs/internal/tree"
	"github.com/encryptfs/encryptfs/internal/uring"
	"golang.org/x/sys/unix"
)

// Kind is the class of an error.
type Kind int

// The kinds. The POSIX kinds (NotFound .. NoSpace) have the errno of the
// same meaning (see Errno); the others have none and each door decides what
// they become (EIO in the mount, an exit code in the CLI).
const (
	// Other is every error no sentinel classifies: I/O errors of the
	// backing store, bugs. The mount logs them as unexpected.
	Other Kind = iota
	// NotFound: no such entry (ENOENT).
	NotFound
	// Exists: the name is taken (EEXIST).
	Exists
	// NotEmpty: a directory to remove or replace has entries (ENOTEMPTY).
	NotEmpty
	// IsDir: a directory where a non-directory is needed (EISDIR).
	IsDir
	// NotDir: a non-directory where a directory is needed (ENOTDIR).
	NotDir
	// NotPermitted: refused by a rule of the format, such as a hard link
	// of a symlink (EPERM).
	NotPermitted
	// Invalid: an argument the operation cannot take: a name that is not
	// a single component, a negative offset (EINVAL).
	Invalid
	// NameTooLong: a plaintext name over the format's limit (ENAMETOOLONG).
	NameTooLong
	// TooBig: an xattr name or value (or a symlink target) whose encrypted
	// form does not fit (E2BIG).
	TooBig
	// NotSupported: an operation the format does not offer, such as an
	// xattr outside user.* (EOPNOTSUPP).
	NotSupported
	// ReadOnly: the entry or file system may be read but not changed
	// (EROFS): a sync tool's conflict copy, an undecryptable entry.
	ReadOnly
	// NoSpace: the file system written to is full or over quota (ENOSPC,
	// EDQUOT).
	NoSpace
	// FileTooBig: an offset or size beyond the largest file the format and
	// an int64 backing offset allow (EFBIG).
	FileTooBig
	// Busy: a file open read-only elsewhere cannot be shared with a writer
	// (ETXTBSY).
	Busy
	// TooManyLinks: a file has as many names as the vault binds (65000
	// with location binding, ext4's limit too): link(2) gives EMLINK.
	TooManyLinks
	// Corrupt: data in the vault failed authentication or is malformed (a
	// chunk, a header, a name, a symlink target, an xattr, a directory ID).
	Corrupt
	// WrongPassword: the password or master key does not unlock the vault.
	WrongPassword
	// NoConfig: the directory holds no vault config.
	NoConfig
	// CorruptConfig: the vault config is corrupt or was edited.
	CorruptConfig
	// UnsupportedVault: the vault needs something this build lacks: a newer
	// format version, an unknown feature flag, a cipher or chunk size it
	// does not know; or it is a reverse-mode vault opened in forward mode.
	UnsupportedVault
	// KeySlot: a change to the key slots refused: removing the last
	// slot, a slot ID the config does not have, one slot too many.
	KeySlot
	// Closed: a vault or file was used after Close.
	Closed
	// RolledBack: the vault went back to an older state than this machine
	// saw (freshness, docs/format.md §15 and §15a): a strict mount's
	// refusal, a config from before a revoke.
	RolledBack
)

// Kinds lists every kind, for tests and documentation tables.
func Kinds() []Kind {
	ks := make([]Kind, 0, int(RolledBack)+1)
	for k := Other; k <= RolledBack; k++ {
		ks = append(ks, k)
	}
	return ks
}

var kindNames = [...]string{
	Other: "other", NotFound: "not found", Exists: "exists", NotEmpty: "not empty",
	IsDir: "is a directory", NotDir: "not a directory", NotPermitted: "not permitted",
	Invalid: "invalid", NameTooLong: "name too long", TooBig: "too big",
	NotSupported: "not supported", ReadOnly: "read-only", NoSpace: "no space", FileTooBig: "file too big", Busy: "busy",
	TooManyLinks: "too many links",
	Corrupt:      "corrupt", WrongPassword: "wrong password", NoConfig: "no config",
	CorruptConfig: "corrupt config", UnsupportedVault: "unsupported vault",
	KeySlot: "key slot", Closed: "closed", RolledBack: "rolled back",
}

func (k Kind) String() string {
	if k < 0 || int(k) >= len(kindNames) {
		return "unknown kind"
	}
	return kindNames[k]
}

// posix pairs the POSIX kinds with their errno. The errno lives here, not
// only in the FUSE layer, because the same pairs classify the kernel's
// errnos that come up from the backing store (an ENOSPC from a write is
// NoSpace wherever it surfaces), and the vault package reports errnos as
// package os does. Nothing below the FUSE layer returns these as errors.
var posix = [...]struct {
	kind  Kind
	errno unix.Errno
}{
	{NotFound, unix.ENOENT},
	{Exists, unix.EEXIST},
	{NotEmpty, unix.ENOTEMPTY},
	{IsDir, unix.EISDIR},
	{NotDir, unix.ENOTDIR},
	{NotPermitted, unix.EPERM},
	{Invalid, unix.EINVAL},
	{NameTooLong, unix.ENAMETOOLONG},
	{TooBig, unix.E2BIG},
	{NotSupported, unix.EOPNOTSUPP},
	{ReadOnly, unix.EROFS},
	{NoSpace, unix.ENOSPC},
	{NoSpace, unix.EDQUOT}, // Errno gives the first: ENOSPC
	{FileTooBig, unix.EFBIG},
	{Busy, unix.ETXTBSY},
	{TooManyLinks, unix.EMLINK},
}

// Errno is the errno of a POSIX kind, 0 for the others (Corrupt, Other,
// the vault-level kinds), which have no errno of their own.
func (k Kind) Errno() unix.Errno {
	for _, p := range posix {
		if p.kind == k {
			return p.errno
		}
	}
	return 0
}

// sentinels classifies the sentinel errors of the lower layers, in order:
// the first that errors.Is finds in an error's chain wins, so the config's
// errors (which wrap kdf's and content's) come before those they wrap.
var sentinels = [...]struct {
	err  error
	kind Kind
}{
	{config.ErrWrongPassword, WrongPassword},
	{config.ErrNotFound, NoConfig},
	{config.ErrFutureVersion, UnsupportedVault},
	{config.ErrUnknownFeature, UnsupportedVault},
	{config.ErrKDFMemory, UnsupportedVault}, // the config asks for more memory than the machine has free
	{config.ErrCorrupt, CorruptConfig},
	// Format 2's key slots. ErrCorrupt comes first: a duplicate ID or too
	// many slots found while parsing are a corrupt config.
	{config.ErrNoSlotMatch, WrongPassword},
	{config.ErrTampered, CorruptConfig},
	{config.ErrDuplicateSlot, CorruptConfig},
	{config.ErrLastSlot, KeySlot},
	{config.ErrUnknownSlot, KeySlot},
	{config.ErrSlotLimit, KeySlot},
	{config.ErrNotV2, UnsupportedVault},
	{config.ErrNotV1, UnsupportedVault},
	{config.ErrReverseV2, UnsupportedVault},
	{config.ErrEpochLimit, KeySlot}, {keyslot.ErrNeedsCredential, KeySlot}, // master-key epochs
	{keyslot.ErrKeyfile, Invalid},
	{keyslot.ErrPaperKey, Invalid},
	{keyslot.ErrIdentity, Invalid},
	{keyslot.ErrRecipient, Invalid},
	{keyslot.ErrLabel, Invalid},
	{tree.ErrReverse, UnsupportedVault},
	{content.ErrUnsupported, UnsupportedVault},

	{content.ErrCorruptChunk, Corrupt},
	{content.ErrBadHeader, Corrupt},
	{content.ErrTruncated, Corrupt},
	{names.ErrBadName, Corrupt},
	{meta.ErrCorrupt, Corrupt},
	{siv.ErrOpen, Corrupt},
	{tree.ErrCorruptDir, Corrupt},
	// A directory or file's contents not bound to where they were found
	// (format v2 location binding): moved, copied or grafted there.
	{bind.ErrMisplaced, Corrupt},
	// A file's links file missing, tampered with or another file's.
	{bind.ErrBadLinks, Corrupt},
	// A freshness manifest or epoch file edited or malformed (format v2).
	{freshcrypto.ErrTampered, Corrupt},
	{freshcrypto.ErrMalformed, Corrupt},
	{freshcrypto.ErrMasterKey, Other},
	// A backing file (dirid, sidecar) larger than the format allows.
	{backing.ErrTooBig, Corrupt},
	// A FIFO, device or directory planted where a dirid, sidecar or data
	// file belongs.
	{backing.ErrNotRegular, Corrupt},

	{tree.ErrNotFound, NotFound},
	// A conflict copy hidden by another entry of its displayed name: under
	// that name another entry is found, so as itself it is not there.
	{tree.ErrShadowed, NotFound},
	{tree.ErrExists, Exists},
	{tree.ErrNotEmpty, NotEmpty},
	{tree.ErrIsDir, IsDir},
	{tree.ErrNotDir, NotDir},
	{tree.ErrNotPermitted, NotPermitted},
	{tree.ErrInvalid, Invalid},
	{tree.ErrReadOnly, ReadOnly},
	{tree.ErrXattrListFull, NoSpace}, // as ext4 and tmpfs refuse an xattr they have no room for
	{tree.ErrNoXattrs, NotSupported},
	{names.ErrNameTooLong, NameTooLong},
	{names.ErrInvalidName, Invalid},
	{backing.ErrBadComponent, Invalid},
	{fileengine.ErrInvalid, Invalid},
	{kdf.ErrParams, Invalid},
	{meta.ErrTooLong, TooBig},
	{meta.ErrNotUser, NotSupported},
	{fileengine.ErrClosed, Closed},
	{content.ErrWiped, Closed}, // the session's keys were wiped: used after Close
	{fileengine.ErrBusy, Busy},
	{fileengine.ErrTooManyLinks, TooManyLinks},
	{bind.ErrWiped, Closed},
	{uring.ErrUnsupported, NotSupported}, // the kernel has no io_uring
	{fileengine.ErrTooLarge, FileTooBig},
	{fileengine.ErrNotSIV, UnsupportedVault},
	// A reverse view's plaintext file shrank while it was read: an I/O
	// error of the source, not damage to a vault.
	{fileengine.ErrChanged, Other},
}

// Of classifies err: a marked sentinel (New) first, then the lower layers'
// sentinels, then a kernel errno, then io/fs's generic errors. nil and
// unknown errors are Other.
func Of(err error) Kind {
	if err == nil {
		return Other
	}
	var m *marked
	if errors.As(err, &m) {
		return m.kind
	}
	for _, s := range sentinels {
		if errors.Is(err, s.err) {
			return s.kind
		}
	}
	var e unix.Errno
	if errors.As(err, &e) {
		for _, p := range posix {
			if p.errno == e {
				return p.kind
			}
		}
		return Other
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return NotFound
	case errors.Is(err, fs.ErrExist):
		return Exists
	case errors.Is(err, fs.ErrPermission):
		return NotPermitted
	case errors.Is(err, fs.ErrInvalid):
		return Invalid
	case errors.Is(err, fs.ErrClosed):
		return Closed
	}
	return Other
}

// Is reports whether err is of kind k: shorthand for Of(err) == k.
func Is(err error, k Kind) bool { return err != nil && Of(err) == k }

// marked is a sentinel of a layer above this package that carries its kind.
type marked struct {
	msg  string
	kind Kind
}

func (m *marked) Error() string { return m.msg }

// New returns a sentinel error with message msg that Of classifies as k,
// for the packages above this one (vault, fsck), which this package cannot
// import. Compare it with errors.Is as any sentinel.
func New(k Kind, msg string) error { return &marked{msg: msg, kind: k} }

// Errno maps an error from tree, core or the backing store to the errno a
// FUSE frontend answers, by its Kind: a kernel errno passes through
// unchanged; a POSIX kind (tree.ErrNotFound, names.ErrNameTooLong, ...)
// gives its errno; corruption and everything else give EIO. Both
// frontends (internal/forwardfs, internal/reversefs) use it, each with its
// own logging around it.
func Errno(err error) unix.Errno {
	if err == nil {
		return 0
	}
	// The commonest failures of a request answered first, without the
	// reflection of errors.As and the walk of every sentinel in Of: a
	// kernel errno as it came, and a lookup of a name that is not there
	// (once per file an untar creates; format 2's lookups fail with
	// tree.ErrNotFound itself, which wraps no errno).
	if e, ok := err.(unix.Errno); ok {
		return e
	}
	if err == tree.ErrNotFound {
		return unix.ENOENT
	}
	return classifiedErrno(err)
}

// classifiedErrno is Errno without its shortcuts: a kernel errno in the
// chain, else the errno of err's Kind, else EIO.
func classifiedErrno(err error) unix.Errno {
	var e unix.Errno
	if errors.As(err, &e) {
		return e
	}
	if e := Of(err).Errno(); e != 0 {
		return e
	}
	return unix.EIO
}
