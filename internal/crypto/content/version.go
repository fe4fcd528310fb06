package content

import (
	"encoding/binary"
	"fmt"
)

// HeaderVersion reads the version field that starts every file header
// (Version, or VersionV2), unauthenticated: it says which parser and
// header size apply (ParseHeader then checks the MAC). b shorter than the
// field is ErrBadHeader. The one place the field is read raw, for those
// who read headers of both formats (the content upgrade).
func HeaderVersion(b []byte) (uint16, error) {
	if len(b) < 2 {
		return 0, fmt.Errorf("%w: %d bytes", ErrBadHeader, len(b))
	}
	return binary.BigEndian.Uint16(b[0:2]), nil
}
