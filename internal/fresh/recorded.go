package fresh

import "strings"

// NothingRecorded tells a vault no device has recorded yet (new, or just
// upgraded, and not mounted since) from one that went back: no device
// has an epoch file, and the only issues are entries no manifest names.
// A vault whose records this client saw and that are gone has other
// issues ("epoch file deleted").
func (r *Report) NothingRecorded() bool {
	if len(r.Devices) > 0 || r.Status == RolledBack {
		return false
	}
	for _, i := range r.Issues {
		if i.Device != "" || !strings.HasPrefix(i.What, "not in any manifest") {
			return false
		}
	}
	return true
}
