package engine

import (
	"errors"
	"slices"
	"strings"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/crypto/meta"
	"github.com/encryptfs/encryptfs/internal/crypto/names"
	"golang.org/x/sys/unix"
)

// List computes the whole view of plaintext directory dirRel: its
// entries under their encrypted names, the long-name and long-target
// sidecars, encryptfs.dirid and, in the root, encryptfs.conf. Sorted by
// name, so the listing is the same on every mount.
func (v *ReverseView) List(dirRel string) ([]ViewEntry, error) {
	fd, err := backing.OpenDir(v.rootfd, dirRel)
	if err != nil {
		return nil, err
	}
	defer backing.Close(fd)
	dirSt, err := backing.Fstat(fd)
	if err != nil {
		return nil, err
	}
	out := []ViewEntry{{Name: names.DirIDFile, Kind: ViewDirID, Rel: dirRel, St: dirSt}}
	if v.beyondFS(&dirSt) {
		return out, nil
	}
	ents, err := backing.ReadDir(fd)
	if err != nil {
		return nil, err
	}
	if dirRel == "" {
		out = append(out, ViewEntry{Name: names.ConfigFile, Kind: ViewConfig, St: v.configStat()})
	}
	for _, de := range ents {
		if out, err = v.appendEntry(out, fd, dirRel, de.Name); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(out, func(a, b ViewEntry) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// appendEntry appends to out the view entries of plaintext entry name of
// directory fd (dirRel): none if it is excluded or gone, else the entry
// and its sidecars.
func (v *ReverseView) appendEntry(out []ViewEntry, fd int, dirRel, name string) ([]ViewEntry, error) {
	rel := JoinRel(dirRel, name)
	if v.Excluded(rel) {
		return out, nil
	}
	st, err := backing.Fstatat(fd, name)
	if errors.Is(err, unix.ENOENT) {
		return out, nil // removed since getdents
	} else if err != nil {
		return nil, err
	}
	_, viewName, long, err := v.encName(rel)
	if err != nil {
		v.logf("readdir %q: %v", rel, err)
		return out, nil
	}
	k := kindOf(st.Mode)
	out = append(out, ViewEntry{Name: viewName, Kind: k, Rel: rel, St: st})
	if long {
		out = append(out, ViewEntry{Name: names.SidecarName(viewName), Kind: ViewNameSidecar, Rel: rel, St: st})
	}
	if k == ViewSymlink {
		target, err := backing.Readlinkat(fd, name)
		if err != nil {
			return nil, err
		}
		if len(target) > meta.MaxInlineTarget {
			out = append(out, ViewEntry{Name: meta.SymlinkSidecarName(viewName), Kind: ViewLinkSidecar, Rel: rel, St: st})
		}
	}
	return out, nil
}

// Lookup finds view entry name in plaintext directory dirRel. Encrypted
// short names are decrypted directly; reserved names (sidecars) are found
// by listing the directory.
func (v *ReverseView) Lookup(dirRel, name string) (ViewEntry, error) {
	switch {
	case name == names.DirIDFile:
		st, err := v.Lstat(dirRel)
		return ViewEntry{Name: name, Kind: ViewDirID, Rel: dirRel, St: st}, err
	case names.IsReserved(name):
		ents, err := v.List(dirRel)
		if err != nil {
			return ViewEntry{}, err
		}
		i, found := slices.BinarySearchFunc(ents, name, func(e ViewEntry, n string) int { return strings.Compare(e.Name, n) })
		if !found {
			return ViewEntry{}, ErrNoEntry
		}
		return ents[i], nil
	}
	if v.oneFS {
		if st, err := v.Lstat(dirRel); err != nil || v.beyondFS(&st) {
			return ViewEntry{}, ErrNoEntry // shown empty (see List)
		}
	}
	plain, err := v.r.names.Decrypt(v.r.derive.DirID(dirRel), name)
	if err != nil {
		return ViewEntry{}, ErrNoEntry // not a name this directory can show
	}
	rel := JoinRel(dirRel, plain)
	if v.Excluded(rel) {
		return ViewEntry{}, ErrNoEntry
	}
	st, err := v.Lstat(rel)
	if err != nil {
		return ViewEntry{}, err
	}
	return ViewEntry{Name: name, Kind: kindOf(st.Mode), Rel: rel, St: st}, nil
}

// Restat refreshes the plaintext stat behind a view entry of kind k at rel
// and checks that the object still has the type the entry was found with
// (ESTALE: replaced by another type of file).
func (v *ReverseView) Restat(k ViewKind, rel string) (unix.Stat_t, error) {
	if k == ViewConfig {
		return v.configStat(), nil
	}
	st, err := v.Lstat(rel)
	if err != nil {
		return st, err
	}
	switch k {
	case ViewDir, ViewFile, ViewSymlink, ViewSpecial:
		if kindOf(st.Mode) != k {
			return st, ErrStale // replaced by another type of file
		}
	case ViewDirID:
		if kindOf(st.Mode) != ViewDir {
			return st, ErrStale
		}
	case ViewLinkSidecar:
		if kindOf(st.Mode) != ViewSymlink {
			return st, ErrStale
		}
	}
	return st, nil
}
