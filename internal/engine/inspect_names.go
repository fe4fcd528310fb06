package engine

import (
	"strings"

	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/crypto/bind"
	freshcrypto "github.com/encryptfs/encryptfs/internal/crypto/fresh"
	"github.com/encryptfs/encryptfs/internal/crypto/meta"
	"github.com/encryptfs/encryptfs/internal/crypto/names"
	"github.com/encryptfs/encryptfs/internal/tree"
)

// The raw views of backing names that an offline check (internal/fsck)
// needs to say what a name in CIPHERDIR is without decrypting it. The
// rules live in the layers below (names, meta, config, bind, tree); this
// file is the one place a door learns them, so that fsck does not import
// those layers.

// DirIDFile is the backing name of a directory's ID file.
const DirIDFile = names.DirIDFile

// DirIDSize is the size of a directory ID.
const DirIDSize = names.DirIDSize

// NameClass is what a backing name that is no entry stands for
// (ClassifyName).
type NameClass int

// The classes of ClassifyName, in the order it tests them.
const (
	NameDirID           NameClass = iota // the directory's ID file
	NameAltDirID                         // a sync tool's copy of the ID file
	NameConfig                           // the root's config or its backup
	NameUpgradeMarker                    // the root's upgrade marker (or its temp)
	NameFresh                            // the root's freshness epochs and manifests
	NameConfigTemp                       // a config left by an interrupted write
	NameLongSidecar                      // a long-name sidecar
	NameLongSidecarCopy                  // a copy of a long-name sidecar by another program
	NameSymlinkSidecar                   // a long symlink target's sidecar
	NameTemp                             // a temporary entry of an interrupted operation
	NameLinks                            // a links file's name (in the root)
	NameReserved                         // none of the above: unknown in the reserved namespace
)

// ClassifyName says what backing name bn, which is no entry, is; isRoot:
// bn is in CIPHERDIR's root, where the vault-wide files live.
func ClassifyName(bn string, isRoot bool) NameClass {
	switch {
	case bn == names.DirIDFile:
		return NameDirID
	case tree.IsAltDirIDName(bn):
		return NameAltDirID
	case isRoot && (bn == config.FileName || bn == config.BackupName):
		return NameConfig
	case isRoot && (bn == config.UpgradeMarkerName || bn == config.UpgradeMarkerName+".tmp"):
		return NameUpgradeMarker
	case isRoot && freshcrypto.IsName(bn): // format.md §15
		return NameFresh
	case isRoot && (bn == config.FileName+".tmp" || bn == config.BackupName+".tmp"):
		return NameConfigTemp
	case names.IsSidecar(bn):
		return NameLongSidecar
	case isLongSidecarCopy(bn):
		return NameLongSidecarCopy
	case strings.HasPrefix(bn, meta.SymlinkSidecarPrefix):
		return NameSymlinkSidecar
	case strings.HasPrefix(bn, names.TempPrefix):
		return NameTemp
	case isRoot && IsLinksName(bn):
		return NameLinks
	}
	return NameReserved
}

// isLongSidecarCopy reports whether bn is a copy of a long-name sidecar
// ("encryptfs.long.<H> (1).name"): it holds a name, no entry.
func isLongSidecarCopy(bn string) bool {
	base, ok := strings.CutSuffix(bn, names.LongNameSuffix)
	return ok && !names.IsSidecar(bn) && tree.IsLongCopy(base)
}

// LongSidecarOwner is the long-name entry whose sidecar is bn
// (NameLongSidecar).
func LongSidecarOwner(bn string) string { return strings.TrimSuffix(bn, names.LongNameSuffix) }

// IsLongName reports whether bn is a long-name entry (its name is in a
// sidecar: LongNameSidecar).
func IsLongName(bn string) bool { return names.IsLongName(bn) }

// IsLongCopy reports whether bn is a sync tool's copy of a long-name
// entry.
func IsLongCopy(bn string) bool { return tree.IsLongCopy(bn) }

// LongNameSidecar is the backing name of long-name entry bn's sidecar.
func LongNameSidecar(bn string) string { return names.SidecarName(bn) }

// CheckLongSidecar fails if side, read from bn's sidecar, does not hash to
// bn.
func CheckLongSidecar(bn string, side []byte) error {
	_, err := names.CheckSidecar(bn, side)
	return err
}

// LongCopyOf returns the long-name entry that a sync tool's copy bn was
// made of (ok false: bn is no such copy).
func LongCopyOf(bn string) (long string, ok bool) {
	long, _, ok = names.SplitLongForeign(bn)
	return long, ok
}

// SymlinkSidecar returns the sidecar that symlink bn uses when its raw
// target is the long-target marker ("" otherwise).
func SymlinkSidecar(bn, rawTarget string) string {
	if rawTarget != meta.LongSymlinkMarker {
		return ""
	}
	return meta.SymlinkSidecarName(bn)
}

// IsXattrName reports whether backing xattr name bn is one of EncryptFS's.
func IsXattrName(bn string) bool { return strings.HasPrefix(bn, meta.XattrPrefix) }

// IsLinksName reports whether bn is a links file's name.
func IsLinksName(bn string) bool {
	_, ok := bind.ParseLinksName(bn)
	return ok
}

// LinksFileOf returns the file ID whose links file bn is.
func LinksFileOf(bn string) (FileID, bool) {
	id, ok := bind.ParseLinksName(bn)
	if !ok || len(id) != len(FileID{}) {
		return FileID{}, false
	}
	return FileID(id), true
}
