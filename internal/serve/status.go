package serve

import (
	"errors"
	"net/http"

	"github.com/encryptfs/encryptfs/internal/fault"
)

// statusOf is the HTTP status of an error of the vault, for the requests
// this door answers itself (GET, HEAD and the refusals before
// x/net/webdav); the rest get x/net/webdav's mapping. Like the mount's
// errnos, it derives from fault.Of: data that fails authentication is a
// server error (500), never "not found".
func statusOf(err error) int {
	switch {
	case errors.Is(err, errReadOnly):
		return http.StatusForbidden
	case errors.Is(err, errBadPath):
		return http.StatusBadRequest
	case errors.Is(err, errIsDir):
		return http.StatusMethodNotAllowed
	}
	switch fault.Of(err) {
	case fault.NotFound:
		return http.StatusNotFound
	case fault.Exists, fault.IsDir:
		return http.StatusMethodNotAllowed
	case fault.NotDir, fault.NotEmpty, fault.Busy:
		return http.StatusConflict
	case fault.NotPermitted, fault.ReadOnly:
		return http.StatusForbidden
	case fault.Invalid, fault.NameTooLong:
		return http.StatusBadRequest
	case fault.NoSpace:
		return http.StatusInsufficientStorage
	case fault.FileTooBig:
		return http.StatusRequestEntityTooLarge
	case fault.Closed:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}
