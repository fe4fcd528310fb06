package session

import (
	"fmt"
	"io"

	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/crypto/bind"
	"github.com/encryptfs/encryptfs/internal/crypto/keys"
	"github.com/encryptfs/encryptfs/internal/fault"
	"github.com/encryptfs/encryptfs/internal/keyslot"
	"github.com/encryptfs/encryptfs/internal/tree"
)

// Master-key epochs (docs/format.md §3b). A config with the KeyEpochs
// flag wraps K_e in its slots and seals K_0 … K_{e-1}; the session derives
// the keys of every epoch: epoch 0's (K_0) are the vault's keys as before
// (names of old directories, symlinks, xattrs, bindings of files), and
// each epoch's contents, header MAC, names and directory binding keys go
// to the content suite and the tree, which pick them by the epoch an
// object records. New files and directories get the current epoch.
//
// Only location-bound content (v2 headers and ID files) records an epoch,
// so epochs need binding: a vault whose content is format 1's refuses to
// revoke (ErrRevokeUnbound), and a config with epochs opened without
// binding is refused the same way rather than read with the wrong keys.

// ErrRevokeUnbound: a revoke (or a config with epochs) on a vault whose
// content does not record epochs (no location binding): every object there
// is under K_0, so a revoke would only rotate the config, and the revoked
// key would still read every file written afterwards.
var ErrRevokeUnbound = fault.New(fault.UnsupportedVault,
	"session: this vault's files and directories do not record a master-key epoch (its content is format 1's, without location binding), so revoking would not keep the old key from new data; create a vault with location binding (format 2) and copy the files over")

// withEpochs returns o with the older epoch keys of c, unsealed with
// master (K_e, whose MAC the caller checked). The caller wipes them
// (wipeEpochs) once the session is built.
func (o Options) withEpochs(c *config.Config, master []byte) (Options, error) {
	if !c.IsV2() || c.Epoch() == 0 {
		return o, nil
	}
	chain, err := c.EpochKeys(master)
	if err != nil {
		return o, err
	}
	o.epochs = chain
	return o, nil
}

func (o Options) wipeEpochs() {
	for _, k := range o.epochs {
		clear(k)
	}
}

// openEpochs is New for config c with its current key master.
func (o Options) openEpochs(dir string, c *config.Config, master []byte) (*Session, error) {
	oe, err := o.withEpochs(c, master)
	if err != nil {
		return nil, err
	}
	defer oe.wipeEpochs()
	if err := o.checkUpgrade(dir, c, master); err != nil {
		return nil, err
	}
	k0 := master
	if len(oe.epochs) > 0 {
		k0 = oe.epochs[0]
	}
	sv, err := o.checkSeen(dir, c, k0)
	if err != nil {
		return nil, err
	}
	s, err := New(dir, c.Params, master, oe)
	if err != nil {
		return nil, err
	}
	if err := sv.record(c); err != nil {
		s.Close()
		return nil, err
	}
	s.seen = sv
	return s, nil
}

// newEpochs is New for a vault at epoch e = len(o.epochs) ≥ 1 whose
// current key is current: the session of K_0, then the keys of epochs
// 1 … e added to its suite and tree, and e made the epoch of new objects.
func newEpochs(dir string, p config.Params, current []byte, o Options) (*Session, error) {
	base := o.epochs[0]
	chain := append(append([][]byte(nil), o.epochs[1:]...), current)
	o.epochs = nil
	s, err := New(dir, p, base, o)
	if err != nil {
		return nil, err
	}
	if s.binder == nil { // checked on the session: New decides binding
		s.Close()
		return nil, ErrRevokeUnbound
	}
	if err := s.addEpochs(chain); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// addEpochs derives the keys of epochs 1 … len(chain) (chain[i] is
// K_{i+1}) into the suite and the tree and makes the last one current.
func (s *Session) addEpochs(chain [][]byte) error {
	suite := s.engine.Suite()
	eps := make([]tree.Epoch, 0, len(chain))
	for i, key := range chain {
		e := uint32(i + 1)
		k, err := keys.Derive(key)
		if err != nil {
			return err
		}
		bk, err := keys.DeriveBinding(key)
		if err != nil {
			k.Wipe()
			return err
		}
		b, err := bind.New(bk)
		clear(bk)
		if err != nil {
			k.Wipe()
			return err
		}
		s.epochBinders = append(s.epochBinders, b)
		err = suite.AddEpoch(e, k.Contents, k.HeaderMAC)
		eps = append(eps, tree.Epoch{Names: append([]byte(nil), k.Names...), Binder: b})
		k.Wipe()
		if err != nil {
			return fmt.Errorf("session: epoch %d: %w", e, err)
		}
	}
	defer func() {
		for _, ep := range eps {
			clear(ep.Names)
		}
	}()
	e := uint32(len(chain))
	if err := s.tree.Epochs().Set(eps, e); err != nil {
		return err
	}
	return suite.SetEpoch(e)
}

func (s *Session) wipeEpochBinders() {
	for _, b := range s.epochBinders {
		b.Wipe()
	}
	s.epochBinders = nil
}

// Epoch is the master-key epoch new files and directories get (0 without
// epochs).
func (s *Session) Epoch() uint32 { return s.engine.Suite().Epoch() }

// Revoke moves the vault to the next master-key epoch (keyslot.Revoke): a
// fresh random key K_{e+1} from the session's randomness, the older keys
// sealed under it, every slot but spec.Remove re-wrapped to it (see
// keyslot.RevokeSpec for which need their credential), saved atomically
// (one rename: a crash leaves the old or the new config). It returns the
// new epoch. The session itself keeps the keys it was opened with: files
// and directories it makes from now on are still of the old epoch, so
// close it and open the vault again (a mount: remount).
func (s *Session) Revoke(spec keyslot.RevokeSpec) (uint32, error) {
	if s.binder == nil {
		return 0, ErrRevokeUnbound
	}
	var epoch uint32
	var next []byte
	err := s.editConfig(func(c *config.Config, master []byte) error {
		next = make([]byte, keys.MasterKeySize)
		if _, err := io.ReadFull(s.rand, next); err != nil {
			return fmt.Errorf("session: random epoch key: %w", err)
		}
		n, err := keyslot.Revoke(c, master, next, spec, s.rand)
		if err != nil {
			return err
		}
		*c = *n
		epoch = n.Epoch()
		return nil
	})
	if err != nil {
		clear(next)
		return 0, err
	}
	s.mu.Lock()
	clear(s.ring.master)
	s.ring.master = next
	s.mu.Unlock()
	return epoch, nil
}
