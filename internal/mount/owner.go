package mount

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// Owner is the user and group a mount shows as the owner of every entry
// (mount --force-owner, as gocryptfs's -force_owner): for a vault on a
// disk that moves between machines with different uids. The backing
// entries keep their real owners. It is a mount option, so it is parsed
// here; the FUSE frontends only take the numbers (fuseOwner).
type Owner struct{ UID, GID uint32 }

// ParseOwner parses "UID:GID" (numbers).
func ParseOwner(s string) (*Owner, error) {
	u, g, ok := strings.Cut(s, ":")
	uid, uerr := strconv.ParseUint(u, 10, 32)
	gid, gerr := strconv.ParseUint(g, 10, 32)
	if !ok || uerr != nil || gerr != nil {
		return nil, fmt.Errorf("owner %q: want UID:GID, two numbers", s)
	}
	return &Owner{UID: uint32(uid), GID: uint32(gid)}, nil
}

// fuseOwner is o as the frontends' options take it; nil stays nil (the
// real owners are shown).
func (o *Owner) fuseOwner() *fuse.Owner {
	if o == nil {
		return nil
	}
	return &fuse.Owner{Uid: o.UID, Gid: o.GID}
}
