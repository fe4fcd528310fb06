package fresh

import (
	fc "github.com/encryptfs/encryptfs/internal/crypto/fresh"
)

// Accept records the vault as it is now as seen (after a restore from a
// backup, say): it returns the report of what differed, then records
// every name whose current records do not say what it is as this
// device's (a new batch over the whole tree) and sets what this client
// saw of every device to what is there now. It needs the state lock (no
// mount of the vault on this machine).
func (v *Vault) Accept() (*Report, error) {
	if v.lock == nil {
		return nil, ErrLocked
	}
	rep, err := v.check(false)
	if err != nil {
		return nil, err
	}
	v.loadOwn()
	if err := v.batch(true); err != nil {
		return nil, err
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	epochs, err := v.readEpochs()
	if err != nil {
		return nil, err
	}
	seen := map[string]*Seen{}
	for d, ef := range epochs {
		if ef.err != nil {
			continue
		}
		s := &Seen{Epoch: ef.epoch.Counter, Confirmed: ef.epoch.Counter, Manifests: map[string]uint64{}}
		for _, c := range ef.epoch.Manifests {
			if mf := v.readManifest(d, c.DirID); mf.err == nil {
				s.Manifests[fc.EncodeID(c.DirID[:])] = mf.m.Counter
			}
		}
		seen[fc.EncodeID(d[:])] = s
	}
	v.state.Seen = seen
	v.state.Pending = nil
	return rep, v.state.save(v.stateDir)
}
