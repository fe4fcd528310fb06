package fresh

import (
	fc "github.com/encryptfs/encryptfs/internal/crypto/fresh"
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
	Dir, Name string
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
// among the noted ones.
func (v *Vault) noteUnrecorded(us []Unrecorded) {
	for _, u := range us {
		v.noted.touch(u.Dir, u.Name)
		if u.Expect != nil {
			e := expected{present: u.Expect.Present, known: u.Expect.Known && len(u.Expect.ID) == fc.IDSize, gen: u.Expect.Gen}
			if e.known {
				e.id = [fc.IDSize]byte(u.Expect.ID)
			}
			v.noted.expectAt(u.Dir, u.Name, &e)
		}
	}
}

// HasUnrecorded reports whether the state directory dir keeps changes
// the last mount could not record (encryptfs unmount tells the user).
func HasUnrecorded(dir string) bool {
	s, err := loadState(dir, nil, false)
	return err == nil && len(s.Unrecorded) > 0
}
