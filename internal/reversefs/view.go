package reversefs

import "github.com/encryptfs/encryptfs/internal/engine"

// kind is what a view entry shows (engine.ViewKind).
type kind = engine.ViewKind

const (
	kindDir         = engine.ViewDir
	kindFile        = engine.ViewFile
	kindSymlink     = engine.ViewSymlink
	kindSpecial     = engine.ViewSpecial
	kindDirID       = engine.ViewDirID
	kindNameSidecar = engine.ViewNameSidecar
	kindLinkSidecar = engine.ViewLinkSidecar
	kindConfig      = engine.ViewConfig
)

// viewEntry is one entry of a view directory, as the engine lists it.
type viewEntry = engine.ViewEntry

// join appends a name to a relative plaintext directory path.
func join(dir, name string) string { return engine.JoinRel(dir, name) }
