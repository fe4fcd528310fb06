package vault_test

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	iofs "io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/cli"
	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/crypto/bind"
	"github.com/encryptfs/encryptfs/internal/crypto/content"
	freshcrypto "github.com/encryptfs/encryptfs/internal/crypto/fresh"
	"github.com/encryptfs/encryptfs/internal/crypto/kdf"
	"github.com/encryptfs/encryptfs/internal/crypto/keys"
	"github.com/encryptfs/encryptfs/internal/crypto/meta"
	"github.com/encryptfs/encryptfs/internal/crypto/names"
	"github.com/encryptfs/encryptfs/internal/crypto/reverse"
	"github.com/encryptfs/encryptfs/internal/crypto/siv"
	"github.com/encryptfs/encryptfs/internal/engine"
	"github.com/encryptfs/encryptfs/internal/fault"
	"github.com/encryptfs/encryptfs/internal/fileengine"
	"github.com/encryptfs/encryptfs/internal/fresh"
	"github.com/encryptfs/encryptfs/internal/fsck"
	"github.com/encryptfs/encryptfs/internal/keyslot"
	"github.com/encryptfs/encryptfs/internal/mount"
	"github.com/encryptfs/encryptfs/internal/reversefs"
	"github.com/encryptfs/encryptfs/internal/serve"
	"github.com/encryptfs/encryptfs/internal/session"
	"github.com/encryptfs/encryptfs/internal/transport"
	"github.com/encryptfs/encryptfs/internal/tree"
	"github.com/encryptfs/encryptfs/internal/upgrade"
	"github.com/encryptfs/encryptfs/internal/uring"
	"github.com/encryptfs/encryptfs/vault"
)

// sentinelRow is what one sentinel becomes through each door: the errno a
// process on the mount sees, the CLI's exit code, and what errors.Is finds
// in the vault package's error (nil: the sentinel is passed on as it is).
type sentinelRow struct {
	err   error
	kind  fault.Kind
	errno syscall.Errno
	exit  int
	vault error
}

// sentinelTable lists every exported ErrXxx of the module, keyed by
// package directory and name. TestSentinelTableComplete fails when a new
// one is missing here, so that each gets a decision.
var sentinelTable = map[string]sentinelRow{
	"internal/backing.ErrBadComponent": {backing.ErrBadComponent, fault.Invalid, syscall.EINVAL, cli.ExitError, syscall.EINVAL},
	"internal/backing.ErrNotRegular":   {backing.ErrNotRegular, fault.Corrupt, syscall.EIO, cli.ExitCorruptData, vault.ErrCorrupt},
	"internal/backing.ErrTooBig":       {backing.ErrTooBig, fault.Corrupt, syscall.EIO, cli.ExitCorruptData, vault.ErrCorrupt},

	"internal/config.ErrWrongPassword":  {config.ErrWrongPassword, fault.WrongPassword, syscall.EIO, cli.ExitWrongPassword, vault.ErrWrongPassword},
	"internal/session.ErrWrongPassword": {session.ErrWrongPassword, fault.WrongPassword, syscall.EIO, cli.ExitWrongPassword, vault.ErrWrongPassword},
	"internal/config.ErrCorrupt":        {config.ErrCorrupt, fault.CorruptConfig, syscall.EIO, cli.ExitCorruptConfig, nil},
	"internal/config.ErrFutureVersion":  {config.ErrFutureVersion, fault.UnsupportedVault, syscall.EIO, cli.ExitUnsupported, nil},
	"internal/config.ErrUnknownFeature": {config.ErrUnknownFeature, fault.UnsupportedVault, syscall.EIO, cli.ExitUnsupported, nil},
	"internal/config.ErrKDFMemory":      {config.ErrKDFMemory, fault.UnsupportedVault, syscall.EIO, cli.ExitUnsupported, nil},
	"internal/config.ErrNotFound":       {config.ErrNotFound, fault.NoConfig, syscall.EIO, cli.ExitCipherDir, nil},
	"internal/config.ErrNoSlotMatch":    {config.ErrNoSlotMatch, fault.WrongPassword, syscall.EIO, cli.ExitWrongPassword, nil},
	"internal/config.ErrTampered":       {config.ErrTampered, fault.CorruptConfig, syscall.EIO, cli.ExitCorruptConfig, nil},
	"internal/config.ErrDuplicateSlot":  {config.ErrDuplicateSlot, fault.CorruptConfig, syscall.EIO, cli.ExitCorruptConfig, nil},
	"internal/config.ErrLastSlot":       {config.ErrLastSlot, fault.KeySlot, syscall.EIO, cli.ExitKeySlot, nil},
	"internal/config.ErrUnknownSlot":    {config.ErrUnknownSlot, fault.KeySlot, syscall.EIO, cli.ExitKeySlot, nil},
	"internal/config.ErrSlotLimit":      {config.ErrSlotLimit, fault.KeySlot, syscall.EIO, cli.ExitKeySlot, nil},
	"internal/config.ErrNotV2":          {config.ErrNotV2, fault.UnsupportedVault, syscall.EIO, cli.ExitUnsupported, nil},
	"internal/config.ErrNotV1":          {config.ErrNotV1, fault.UnsupportedVault, syscall.EIO, cli.ExitUnsupported, nil},
	"internal/config.ErrReverseV2":      {config.ErrReverseV2, fault.UnsupportedVault, syscall.EIO, cli.ExitUnsupported, nil},

	"internal/config.ErrEpochLimit":           {config.ErrEpochLimit, fault.KeySlot, syscall.EIO, cli.ExitKeySlot, nil},
	"internal/keyslot.ErrNeedsCredential":     {keyslot.ErrNeedsCredential, fault.KeySlot, syscall.EIO, cli.ExitKeySlot, nil},
	"internal/crypto/content.ErrUnknownEpoch": {content.ErrUnknownEpoch, fault.Corrupt, syscall.EIO, cli.ExitCorruptData, vault.ErrCorrupt},

	"internal/keyslot.ErrKeyfile":   {keyslot.ErrKeyfile, fault.Invalid, syscall.EINVAL, cli.ExitError, syscall.EINVAL},
	"internal/keyslot.ErrPaperKey":  {keyslot.ErrPaperKey, fault.Invalid, syscall.EINVAL, cli.ExitError, syscall.EINVAL},
	"internal/keyslot.ErrIdentity":  {keyslot.ErrIdentity, fault.Invalid, syscall.EINVAL, cli.ExitError, syscall.EINVAL},
	"internal/keyslot.ErrRecipient": {keyslot.ErrRecipient, fault.Invalid, syscall.EINVAL, cli.ExitError, syscall.EINVAL},
	"internal/keyslot.ErrLabel":     {keyslot.ErrLabel, fault.Invalid, syscall.EINVAL, cli.ExitError, syscall.EINVAL},

	"internal/fileengine.ErrClosed":       {fileengine.ErrClosed, fault.Closed, syscall.EIO, cli.ExitError, vault.ErrClosed},
	"internal/crypto/content.ErrWiped":    {content.ErrWiped, fault.Closed, syscall.EIO, cli.ExitError, vault.ErrClosed},
	"internal/fileengine.ErrTooLarge":     {fileengine.ErrTooLarge, fault.FileTooBig, syscall.EFBIG, cli.ExitError, syscall.EFBIG},
	"internal/fileengine.ErrBusy":         {fileengine.ErrBusy, fault.Busy, syscall.ETXTBSY, cli.ExitError, syscall.ETXTBSY},
	"internal/fileengine.ErrTooManyLinks": {fileengine.ErrTooManyLinks, fault.TooManyLinks, syscall.EMLINK, cli.ExitError, syscall.EMLINK},
	"internal/crypto/bind.ErrMisplaced":   {bind.ErrMisplaced, fault.Corrupt, syscall.EIO, cli.ExitCorruptData, vault.ErrCorrupt},
	"internal/crypto/bind.ErrBadLinks":    {bind.ErrBadLinks, fault.Corrupt, syscall.EIO, cli.ExitCorruptData, vault.ErrCorrupt},
	"internal/crypto/bind.ErrKey":         {bind.ErrKey, fault.Other, syscall.EIO, cli.ExitError, nil},
	"internal/crypto/bind.ErrWiped":       {bind.ErrWiped, fault.Closed, syscall.EIO, cli.ExitError, vault.ErrClosed},
	"internal/fileengine.ErrNotSIV":       {fileengine.ErrNotSIV, fault.UnsupportedVault, syscall.EIO, cli.ExitUnsupported, nil},
	"internal/fileengine.ErrChanged":      {fileengine.ErrChanged, fault.Other, syscall.EIO, cli.ExitError, nil},
	"internal/fileengine.ErrInvalid":      {fileengine.ErrInvalid, fault.Invalid, syscall.EINVAL, cli.ExitError, syscall.EINVAL},

	// Freshness (format v2, docs/format.md §15).
	"internal/crypto/fresh.ErrTampered":  {freshcrypto.ErrTampered, fault.Corrupt, syscall.EIO, cli.ExitCorruptData, vault.ErrCorrupt},
	"internal/crypto/fresh.ErrMalformed": {freshcrypto.ErrMalformed, fault.Corrupt, syscall.EIO, cli.ExitCorruptData, vault.ErrCorrupt},
	"internal/crypto/fresh.ErrMasterKey": {freshcrypto.ErrMasterKey, fault.Other, syscall.EIO, cli.ExitError, nil},
	"internal/fresh.ErrNoState":          {fresh.ErrNoState, fault.Other, syscall.EIO, cli.ExitError, nil},
	"internal/fresh.ErrBadState":         {fresh.ErrBadState, fault.Other, syscall.EIO, cli.ExitError, nil},
	"internal/fresh.ErrLocked":           {fresh.ErrLocked, fault.Other, syscall.EIO, cli.ExitError, nil},
	// A strict mount's refusal, and a config older than one this machine
	// opened the vault with (docs/format.md §15a): exit 28 wherever.
	"internal/fresh.ErrRolledBack":       {fresh.ErrRolledBack, fault.RolledBack, syscall.EIO, cli.ExitFreshRolledBack, nil},
	"internal/fresh.ErrConfigRolledBack": {fresh.ErrConfigRolledBack, fault.RolledBack, syscall.EIO, cli.ExitFreshRolledBack, nil},

	"internal/crypto/content.ErrBadHeader":    {content.ErrBadHeader, fault.Corrupt, syscall.EIO, cli.ExitCorruptData, vault.ErrCorrupt},
	"internal/crypto/content.ErrCorruptChunk": {content.ErrCorruptChunk, fault.Corrupt, syscall.EIO, cli.ExitCorruptData, vault.ErrCorrupt},
	"internal/crypto/content.ErrTruncated":    {content.ErrTruncated, fault.Corrupt, syscall.EIO, cli.ExitCorruptData, vault.ErrCorrupt},
	"internal/crypto/content.ErrBadRoot":      {content.ErrBadRoot, fault.Corrupt, syscall.EIO, cli.ExitCorruptData, vault.ErrCorrupt},
	"internal/crypto/content.ErrUnsupported":  {content.ErrUnsupported, fault.UnsupportedVault, syscall.EIO, cli.ExitUnsupported, nil},

	"internal/crypto/kdf.ErrParams":     {kdf.ErrParams, fault.Invalid, syscall.EINVAL, cli.ExitError, syscall.EINVAL},
	"internal/crypto/keys.ErrMasterKey": {keys.ErrMasterKey, fault.Other, syscall.EIO, cli.ExitError, nil},

	"internal/crypto/meta.ErrCorrupt": {meta.ErrCorrupt, fault.Corrupt, syscall.EIO, cli.ExitCorruptData, vault.ErrCorrupt},
	"internal/crypto/meta.ErrTooLong": {meta.ErrTooLong, fault.TooBig, syscall.E2BIG, cli.ExitError, syscall.E2BIG},
	"internal/crypto/meta.ErrNotUser": {meta.ErrNotUser, fault.NotSupported, syscall.EOPNOTSUPP, cli.ExitError, syscall.ENOTSUP},
	"internal/crypto/meta.ErrID":      {meta.ErrID, fault.Other, syscall.EIO, cli.ExitError, nil},
	"internal/crypto/meta.ErrKeySize": {meta.ErrKeySize, fault.Other, syscall.EIO, cli.ExitError, nil},

	"internal/crypto/names.ErrInvalidName": {names.ErrInvalidName, fault.Invalid, syscall.EINVAL, cli.ExitError, syscall.EINVAL},
	"internal/crypto/names.ErrNameTooLong": {names.ErrNameTooLong, fault.NameTooLong, syscall.ENAMETOOLONG, cli.ExitError, syscall.ENAMETOOLONG},
	"internal/crypto/names.ErrBadName":     {names.ErrBadName, fault.Corrupt, syscall.EIO, cli.ExitCorruptData, vault.ErrCorrupt},
	"internal/crypto/names.ErrDirID":       {names.ErrDirID, fault.Other, syscall.EIO, cli.ExitError, nil},
	"internal/crypto/names.ErrKeySize":     {names.ErrKeySize, fault.Other, syscall.EIO, cli.ExitError, nil},

	"internal/crypto/reverse.ErrKeySize": {reverse.ErrKeySize, fault.Other, syscall.EIO, cli.ExitError, nil},
	"internal/crypto/reverse.ErrPath":    {reverse.ErrPath, fault.Other, syscall.EIO, cli.ExitError, nil},

	"internal/crypto/siv.ErrOpen":    {siv.ErrOpen, fault.Corrupt, syscall.EIO, cli.ExitCorruptData, vault.ErrCorrupt},
	"internal/crypto/siv.ErrKeySize": {siv.ErrKeySize, fault.Other, syscall.EIO, cli.ExitError, nil},

	"internal/reversefs.ErrChanged": {reversefs.ErrChanged, fault.Other, syscall.EIO, cli.ExitError, nil},
	"internal/reversefs.ErrCipher":  {reversefs.ErrCipher, fault.Other, syscall.EIO, cli.ExitError, nil},
	"internal/reversefs.ErrPattern": {reversefs.ErrPattern, fault.Other, syscall.EIO, cli.ExitError, nil},

	"internal/fsck.ErrSalvageDir":        {fsck.ErrSalvageDir, fault.Other, syscall.EIO, cli.ExitError, nil},
	"internal/session.ErrKDFParams":      {session.ErrKDFParams, fault.Invalid, syscall.EINVAL, cli.ExitError, syscall.EINVAL},
	"internal/session.ErrMasterKey":      {session.ErrMasterKey, fault.Other, syscall.EIO, cli.ExitError, nil},
	"internal/session.ErrNotEmpty":       {session.ErrNotEmpty, fault.Exists, syscall.EEXIST, cli.ExitError, syscall.EEXIST},
	"internal/session.ErrReverse":        {session.ErrReverse, fault.UnsupportedVault, syscall.EIO, cli.ExitUnsupported, nil},
	"internal/session.ErrReverseCipher":  {session.ErrReverseCipher, fault.Other, syscall.EIO, cli.ExitError, nil},
	"internal/session.ErrForgedConfig":   {session.ErrForgedConfig, fault.CorruptConfig, syscall.EIO, cli.ExitCorruptConfig, nil},
	"internal/session.ErrRevokeUnbound":  {session.ErrRevokeUnbound, fault.UnsupportedVault, syscall.EIO, cli.ExitUnsupported, nil},
	"internal/session.ErrConfigChanged":  {session.ErrConfigChanged, fault.Busy, syscall.ETXTBSY, cli.ExitError, syscall.ETXTBSY},
	"internal/session.ErrNoKeyring":      {session.ErrNoKeyring, fault.Other, syscall.EIO, cli.ExitError, nil},
	"internal/session.ErrWrongMasterKey": {session.ErrWrongMasterKey, fault.WrongPassword, syscall.EIO, cli.ExitWrongPassword, nil},
	"internal/mount.ErrNoSession":        {mount.ErrNoSession, fault.Other, syscall.EIO, cli.ExitError, nil},

	// Re-exported by the session (the CLI's config and freshness
	// administration, session/admin_*.go) and by mount (the reverse view's
	// exclude patterns): the same values as their sources above.
	"internal/session.ErrConfigNotFound":  {session.ErrConfigNotFound, fault.NoConfig, syscall.EIO, cli.ExitCipherDir, nil},
	"internal/session.ErrConfigCorrupt":   {session.ErrConfigCorrupt, fault.CorruptConfig, syscall.EIO, cli.ExitCorruptConfig, nil},
	"internal/session.ErrNoSlotMatch":     {session.ErrNoSlotMatch, fault.WrongPassword, syscall.EIO, cli.ExitWrongPassword, nil},
	"internal/session.ErrTampered":        {session.ErrTampered, fault.CorruptConfig, syscall.EIO, cli.ExitCorruptConfig, nil},
	"internal/session.ErrLastSlot":        {session.ErrLastSlot, fault.KeySlot, syscall.EIO, cli.ExitKeySlot, nil},
	"internal/session.ErrUnknownSlot":     {session.ErrUnknownSlot, fault.KeySlot, syscall.EIO, cli.ExitKeySlot, nil},
	"internal/session.ErrSlotLimit":       {session.ErrSlotLimit, fault.KeySlot, syscall.EIO, cli.ExitKeySlot, nil},
	"internal/session.ErrNotV2":           {session.ErrNotV2, fault.UnsupportedVault, syscall.EIO, cli.ExitUnsupported, nil},
	"internal/session.ErrReverseV2":       {session.ErrReverseV2, fault.UnsupportedVault, syscall.EIO, cli.ExitUnsupported, nil},
	"internal/session.ErrRolledBack":      {session.ErrRolledBack, fault.RolledBack, syscall.EIO, cli.ExitFreshRolledBack, nil},
	"internal/session.ErrFreshnessLocked": {session.ErrFreshnessLocked, fault.Other, syscall.EIO, cli.ExitError, nil},
	"internal/mount.ErrPattern":           {mount.ErrPattern, fault.Other, syscall.EIO, cli.ExitError, nil},

	// encryptfs serve webdav (docs/serve.md): the CLI's own refusals of
	// its flags and files (ErrInsecureListen is a usage error there:
	// cli/serve.go), and a file's malformed client properties (corrupt
	// data, as any xattr that does not parse).
	"internal/serve.ErrUsersFile":      {serve.ErrUsersFile, fault.Other, syscall.EIO, cli.ExitError, nil},
	"internal/serve.ErrToken":          {serve.ErrToken, fault.Other, syscall.EIO, cli.ExitError, nil},
	"internal/serve.ErrUserName":       {serve.ErrUserName, fault.Other, syscall.EIO, cli.ExitError, nil},
	"internal/serve.ErrInsecureListen": {serve.ErrInsecureListen, fault.Other, syscall.EIO, cli.ExitError, nil},
	"internal/serve.ErrCorruptProps":   {serve.ErrCorruptProps, fault.Corrupt, syscall.EIO, cli.ExitCorruptData, vault.ErrCorrupt},
	"internal/mount.ErrNoRoot":         {mount.ErrNoRoot, fault.Other, syscall.EIO, cli.ExitError, nil},

	// The content upgrade (session/marker.go, internal/upgrade).
	"internal/session.ErrUpgradeIncomplete": {session.ErrUpgradeIncomplete, fault.UnsupportedVault, syscall.EIO, cli.ExitUnsupported, nil},
	"internal/upgrade.ErrBlocked":           {upgrade.ErrBlocked, fault.Corrupt, syscall.EIO, cli.ExitCorruptData, vault.ErrCorrupt},

	"internal/tree.ErrCorruptDir":       {tree.ErrCorruptDir, fault.Corrupt, syscall.EIO, cli.ExitCorruptData, vault.ErrCorrupt},
	"internal/tree.ErrReverse":          {tree.ErrReverse, fault.UnsupportedVault, syscall.EIO, cli.ExitUnsupported, nil},
	"internal/tree.ErrShadowed":         {tree.ErrShadowed, fault.NotFound, syscall.ENOENT, cli.ExitError, syscall.ENOENT},
	"internal/tree.ErrNotFound":         {tree.ErrNotFound, fault.NotFound, syscall.ENOENT, cli.ExitError, syscall.ENOENT},
	"internal/tree.ErrExists":           {tree.ErrExists, fault.Exists, syscall.EEXIST, cli.ExitError, syscall.EEXIST},
	"internal/tree.ErrNotEmpty":         {tree.ErrNotEmpty, fault.NotEmpty, syscall.ENOTEMPTY, cli.ExitError, syscall.ENOTEMPTY},
	"internal/tree.ErrIsDir":            {tree.ErrIsDir, fault.IsDir, syscall.EISDIR, cli.ExitError, syscall.EISDIR},
	"internal/tree.ErrNotDir":           {tree.ErrNotDir, fault.NotDir, syscall.ENOTDIR, cli.ExitError, syscall.ENOTDIR},
	"internal/tree.ErrNotPermitted":     {tree.ErrNotPermitted, fault.NotPermitted, syscall.EPERM, cli.ExitError, syscall.EPERM},
	"internal/tree.ErrInvalid":          {tree.ErrInvalid, fault.Invalid, syscall.EINVAL, cli.ExitError, syscall.EINVAL},
	"internal/tree.ErrReadOnly":         {tree.ErrReadOnly, fault.ReadOnly, syscall.EROFS, cli.ExitError, syscall.EROFS},
	"internal/engine.ErrChanged":        {engine.ErrChanged, fault.Other, syscall.EIO, cli.ExitError, nil},
	"internal/engine.ErrPattern":        {engine.ErrPattern, fault.Other, syscall.EIO, cli.ExitError, nil},
	"internal/engine.ErrStale":          {engine.ErrStale, fault.Other, syscall.EIO, cli.ExitError, nil},
	"internal/engine.ErrNoEntry":        {engine.ErrNoEntry, fault.NotFound, syscall.ENOENT, cli.ExitError, syscall.ENOENT},
	"internal/engine.ErrNotVirtual":     {engine.ErrNotVirtual, fault.Invalid, syscall.EINVAL, cli.ExitError, syscall.EINVAL},
	"internal/engine.ErrReadOnly":       {engine.ErrReadOnly, fault.ReadOnly, syscall.EROFS, cli.ExitError, syscall.EROFS},
	"internal/tree.ErrXattrListFull":    {tree.ErrXattrListFull, fault.NoSpace, syscall.ENOSPC, cli.ExitNoSpace, syscall.ENOSPC},
	"internal/uring.ErrUnsupported":     {uring.ErrUnsupported, fault.NotSupported, syscall.EOPNOTSUPP, cli.ExitError, syscall.ENOTSUP},
	"internal/transport.ErrUnavailable": {transport.ErrUnavailable, fault.NotSupported, syscall.EOPNOTSUPP, cli.ExitError, syscall.ENOTSUP},
	"internal/tree.ErrNoXattrs":         {tree.ErrNoXattrs, fault.NotSupported, syscall.EOPNOTSUPP, cli.ExitError, syscall.ENOTSUP},

	"vault.ErrWrongPassword": {vault.ErrWrongPassword, fault.WrongPassword, syscall.EIO, cli.ExitWrongPassword, vault.ErrWrongPassword},
	"vault.ErrCorrupt":       {vault.ErrCorrupt, fault.Corrupt, syscall.EIO, cli.ExitCorruptData, vault.ErrCorrupt},
	"vault.ErrClosed":        {vault.ErrClosed, fault.Closed, syscall.EIO, cli.ExitError, vault.ErrClosed},
}

// TestSentinelTable walks every sentinel, bare and wrapped as the layers
// wrap them, through the three doors: the mount's errno, the CLI's exit
// code and the vault's error.
func TestSentinelTable(t *testing.T) {
	for name, row := range sentinelTable {
		t.Run(name, func(t *testing.T) {
			forms := []error{
				row.err,
				fmt.Errorf("context: %w", row.err),
				&iofs.PathError{Op: "open", Path: "a/b", Err: fmt.Errorf("%w: detail", row.err)},
			}
			for _, err := range forms {
				if got := fault.Of(err); got != row.kind {
					t.Errorf("fault.Of(%v) = %v, want %v", err, got, row.kind)
				}
				if got := fault.Errno(err); got != row.errno {
					t.Errorf("fault.Errno(%v) = %v, want %v", err, got, row.errno)
				}
				if got := cli.ExitCode(err); got != row.exit {
					t.Errorf("cli.ExitCode(%v) = %d, want %d", err, got, row.exit)
				}
				got := vault.PathErr("op", "a/b", err)
				var pe *iofs.PathError
				if !errors.As(got, &pe) || pe.Path != "a/b" {
					t.Errorf("vault error %v is not a *fs.PathError for a/b", got)
				}
				if !errors.Is(got, row.err) {
					t.Errorf("vault error %v lost %v", got, row.err)
				}
				if row.vault == nil {
					if got != err && pe.Err != err {
						t.Errorf("vault error %v changed %v", got, err)
					}
				} else if !errors.Is(got, row.vault) {
					t.Errorf("vault error %v is not %v", got, row.vault)
				}
			}
		})
	}
}

// TestKindTable checks that the table's triples follow from the kind
// alone: one classification, three derived mappings. A kernel errno of a
// POSIX kind passes through the mount unchanged and classifies to its kind.
func TestKindTable(t *testing.T) {
	seen := map[fault.Kind]sentinelRow{}
	for name, row := range sentinelTable {
		if prev, ok := seen[row.kind]; ok && (prev.errno != row.errno || prev.exit != row.exit) {
			t.Errorf("%s: kind %v gives (%v, %d), another sentinel of that kind (%v, %d)", name, row.kind, row.errno, row.exit, prev.errno, prev.exit)
		}
		seen[row.kind] = row
	}
	for _, k := range fault.Kinds() {
		e := k.Errno()
		if e == 0 {
			continue
		}
		if got := fault.Of(e); got != k {
			t.Errorf("fault.Of(%v) = %v, want %v", e, got, k)
		}
		if got := fault.Errno(fmt.Errorf("x: %w", e)); got != e {
			t.Errorf("fault.Errno(wrapped %v) = %v", e, got)
		}
		got := vault.PathErr("op", "p", e)
		if !errors.Is(got, e) {
			t.Errorf("vault error for %v = %v", e, got)
		}
	}
	for _, e := range []syscall.Errno{syscall.ENOSPC, syscall.EDQUOT} {
		if got := cli.ExitCode(fmt.Errorf("write: %w", e)); got != cli.ExitNoSpace {
			t.Errorf("cli.ExitCode(%v) = %d, want ExitNoSpace", e, got)
		}
	}
}

// TestSentinelTableComplete parses every package of the module and fails
// if an exported ErrXxx variable is missing from sentinelTable (or the
// table lists one that no longer exists).
func TestSentinelTableComplete(t *testing.T) {
	found := map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir("..", func(p string, d iofs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != ".." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		dir, err := filepath.Rel("..", filepath.Dir(p))
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.VAR {
				continue
			}
			for _, spec := range gd.Specs {
				for _, id := range spec.(*ast.ValueSpec).Names {
					if strings.HasPrefix(id.Name, "Err") && id.IsExported() {
						found[filepath.ToSlash(dir)+"."+id.Name] = true
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) < 10 {
		t.Fatalf("found only %d sentinels: is the module root %s?", len(found), filepath.Clean(".."))
	}
	var missing, stale []string
	for name := range found {
		if _, ok := sentinelTable[name]; !ok {
			missing = append(missing, name)
		}
	}
	for name := range sentinelTable {
		if !found[name] {
			stale = append(stale, name)
		}
	}
	slices.Sort(missing)
	slices.Sort(stale)
	if len(missing) > 0 {
		t.Errorf("sentinels missing from sentinelTable (classify them in internal/fault, then list them): %v", missing)
	}
	if len(stale) > 0 {
		t.Errorf("sentinelTable lists sentinels that no longer exist: %v", stale)
	}
	if _, err := os.Stat(filepath.Join("..", "go.mod")); err != nil {
		t.Fatalf("module root not found: %v", err)
	}
}
