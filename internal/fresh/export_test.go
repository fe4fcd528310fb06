package fresh

import (
	"fmt"
	"sort"
)

// Crash ends a writer as a crash would: no last batch, state left dirty.
func Crash(v *Vault) { v.crash() }

// Trusted counts the names the batches recorded as this device created
// them, without reading them back (batch.go nameNow).
func Trusted(v *Vault) uint64 { return v.trusted.Load() }

// Walks counts the walks of the whole tree (the batches' and the tests').
func Walks(v *Vault) uint64 { return v.walks.Load() }

// BatchAround is a batch that runs between after it has taken the noted
// names and before it records them, as the engine's changes can while a
// batch runs.
func BatchAround(v *Vault, between func()) error {
	v.batchMu.Lock()
	defer v.batchMu.Unlock()
	notes := v.noted.take()
	v.batches.Add(1)
	between()
	return v.record(false, notes)
}

// Inexact lists the names (by plaintext path) whose record by this device
// is not exactly what the disk now holds, with what differs: after a
// batch with no change since, none (every record of the device is of the
// state it recorded, read back or not).
func Inexact(v *Vault) ([]string, error) {
	devs, err := v.allDevices()
	if err != nil {
		return nil, err
	}
	var out []string
	err = v.walk(func(d walkDir) error {
		own := v.dirRecords(devs, d.id)[v.self]
		if own == nil {
			return nil
		}
		for i := range own.Records {
			r := &own.Records[i]
			a, err := v.r.observe(d.fd, r.Name)
			if err != nil {
				return err
			}
			if !exact(a, r) {
				out = append(out, fmt.Sprintf("%s: disk %v %c %x gen %d xattrs %x, record %c %x gen %d xattrs %x",
					v.plainPath(d, r.Name), a.present, a.kind, a.id[:4], a.gen, a.xattrs[:4], r.Kind, r.ObjectID[:4], r.Gen, r.Xattrs[:4]))
			}
		}
		return nil
	})
	sort.Strings(out)
	return out, err
}
