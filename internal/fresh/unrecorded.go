package fresh

import (
	"github.com/encryptfs/encryptfs/internal/backing"
	fc "github.com/encryptfs/encryptfs/internal/crypto/fresh"
	"github.com/encryptfs/encryptfs/internal/tree"
)

// Changes a batch could not record. A batch fails when CIPHERDIR cannot
// take its files (a full disk) or when whoever writes CIPHERDIR makes it
// fail (a file in place of the manifests directory). Neither may lose the
// device's changes, nor make the next mount adopt the vault as it is:
// that is what a crash does (Recover), and the storage must not be able
// to force it (issue 18, L1). So a failed batch's names go back to the
// noted ones, Close keeps them in the local state (Unrecorded) with a
// clean end, and the next mount checks the vault as usual (a strict one
// refuses what went back) and then records just those names.

// Unrecorded is one name a batch could not record, as kept in the local
// state.
type Unrecorded struct {
	// ID is the directory's ID (EncodeID). Dir is what a state written
	// before kept instead, the directory's backing path ("" for the
	// root): read only when ID is empty, and resolved once at Start
	// (noteUnrecorded).
	ID   string `json:",omitempty"`
	Dir  string `json:",omitempty"`
	Name string
	// Expect is what the device made of it (expect.go), if known.
	Expect *UnrecordedExpect `json:",omitempty"`
}

// UnrecordedExpect is an expected in the local state.
type UnrecordedExpect struct {
	Present, Known bool
	ID             []byte `json:",omitempty"`
	Gen            uint64 `json:",omitempty"`
}

// noteUnrecorded takes the names a previous mount could not record back
// among the noted ones. A directory an older state names by backing path
// is found by that path once, here, and known by the ID read there; one
// that cannot be found so makes the next batch record the whole tree.
func (v *Vault) noteUnrecorded(us []Unrecorded) {
	byPath := map[string]dirID{}
	for _, u := range us {
		d, ok := v.unrecordedDir(u, byPath)
		if !ok {
			v.mu.Lock()
			v.fullPending = true
			v.mu.Unlock()
			continue
		}
		v.noted.touch(d, u.Name)
		if u.Expect != nil {
			e := expected{present: u.Expect.Present, known: u.Expect.Known && len(u.Expect.ID) == fc.IDSize, gen: u.Expect.Gen}
			if e.known {
				e.id = [fc.IDSize]byte(u.Expect.ID)
			}
			v.noted.expectAt(d, u.Name, &e)
		}
	}
}

// unrecordedDir is u's directory ID: decoded, or read at u's backing path
// (an older state; byPath keeps what was read).
func (v *Vault) unrecordedDir(u Unrecorded, byPath map[string]dirID) (dirID, bool) {
	if u.ID != "" {
		id, ok := fc.DecodeID(u.ID)
		if !ok || len(id) != fc.IDSize {
			return dirID{}, false
		}
		return dirID(id), true
	}
	if d, ok := byPath[u.Dir]; ok {
		return d, true
	}
	fd, err := backing.OpenDir(v.root, u.Dir)
	if err != nil {
		return dirID{}, false
	}
	defer backing.Close(fd)
	r := tree.ReadDirIDFile(fd)
	if r.Err != nil {
		return dirID{}, false
	}
	f, err := tree.ParseDirIDFile(r.Raw)
	if err != nil || len(f.ID) != fc.IDSize {
		return dirID{}, false
	}
	byPath[u.Dir] = dirID(f.ID)
	return byPath[u.Dir], true
}

// HasUnrecorded reports whether the state directory dir keeps changes
// the last mount could not record (encryptfs unmount tells the user).
func HasUnrecorded(dir string) bool {
	s, err := loadState(dir, nil, false)
	return err == nil && len(s.Unrecorded) > 0
}
