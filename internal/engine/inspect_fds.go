package engine

import "github.com/encryptfs/encryptfs/internal/backing"

// ListRawXattrsFD lists the backing names of the xattrs of the object open
// as fd (through internal/backing).
func ListRawXattrsFD(fd int) ([]string, error) { return backing.Flistxattr(fd) }
