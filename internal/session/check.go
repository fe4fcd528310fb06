package session

import (
	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/tree"
)

// CheckMasterKey tells whether the session's master key is the vault's: a
// wrong key cannot decrypt any name in the root directory
// (ErrWrongMasterKey). checked is false when the root has no entry to try
// (the key could not be checked). Other errors (a root that cannot be
// opened, a missing or corrupt root directory ID) are returned as they
// are: fsck reports those itself.
func (s *Session) CheckMasterKey() (checked bool, err error) {
	rootfd, err := backing.OpenRoot(s.dir)
	if err != nil {
		return false, err
	}
	defer backing.Close(rootfd)
	dirID, err := s.tree.DirIDs().ReadRoot(rootfd)
	if err != nil {
		return false, err
	}
	ents, bad, err := s.tree.List(tree.NewDir(rootfd, dirID, nil))
	if err != nil {
		return false, err
	}
	switch {
	case len(ents) > 0:
		return true, nil
	case len(bad) > 0:
		return false, ErrWrongMasterKey
	}
	return false, nil
}
