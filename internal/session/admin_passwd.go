package session

import "io"

// RewrapConfig is passwd on a config without key slots: a format-1
// vault's, or a PLAINDIR's reverse config (reverse). c, which the caller
// unlocked to masterKey (or was given the master key for), is re-wrapped
// under password with the KDF k; the config as it was is written to
// backup first (if not ""), and then the new one to dir, atomically.
// The master key does not change, so nothing else in the vault does.
func RewrapConfig(dir string, c *Config, reverse bool, masterKey, password []byte, k KDFParams, backup string, rand io.Reader) error {
	previous, err := c.Marshal()
	if err != nil {
		return err
	}
	if err := c.Rewrap(masterKey, password, k, rand); err != nil {
		return err
	}
	if backup != "" {
		if err := WriteConfigBackup(backup, previous); err != nil {
			return err
		}
	}
	if reverse {
		return SaveReverseConfig(dir, c)
	}
	return c.Save(dir)
}
