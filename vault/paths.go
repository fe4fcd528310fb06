package vault

import (
	"path"
	"strings"

	"github.com/encryptfs/encryptfs/internal/engine"
)

// EncryptPath returns the backing path (relative to the vault's directory)
// that stores the plaintext path name. Every directory on the way must
// exist; the last component need not.
func (v *Vault) EncryptPath(name string) (string, error) {
	comps := split(name)
	if len(comps) == 0 {
		return "", nil
	}
	ref, err := v.resolve(name)
	if err != nil {
		return "", pathErr("encrypt-path", name, err)
	}
	defer ref.release()
	parent, err := v.backingPath(comps[:len(comps)-1])
	if err != nil {
		return "", pathErr("encrypt-path", name, err)
	}
	return path.Join(parent, ref.name.Backing), nil
}

// backingPath maps existing plaintext directories to backing names.
func (v *Vault) backingPath(comps []string) (string, error) {
	var out []string
	for i := range comps {
		d, err := v.openDir(comps[:i])
		if err != nil {
			return "", err
		}
		n, _, err := d.Lookup(comps[i], false)
		d.Close()
		if err != nil {
			return "", err
		}
		out = append(out, n.Backing)
	}
	return strings.Join(out, "/"), nil
}

// DecryptPath returns the plaintext path of a backing path (relative to the
// vault's directory, as printed by EncryptPath or seen with ls). Each
// component must exist and decrypt.
func (v *Vault) DecryptPath(backingPath string) (string, error) {
	comps := split(backingPath)
	root, err := v.openDir(nil)
	if err != nil {
		return "", pathErr("decrypt-path", backingPath, err)
	}
	defer root.Close()
	// Found by backing name, the directories on the way are not cached:
	// the cache is keyed by plaintext path.
	d := root.Dir
	var out []string
	for i, c := range comps {
		n, err := d.DecryptName(c)
		if err == nil && i < len(comps)-1 {
			var sub *engine.Dir
			if sub, err = d.Sub(n); err == nil {
				if d != root.Dir {
					d.Close()
				}
				d = sub
			}
		}
		if err != nil {
			if d != root.Dir {
				d.Close()
			}
			return "", pathErr("decrypt-path", backingPath, err)
		}
		out = append(out, n.Plain)
	}
	if d != root.Dir {
		d.Close()
	}
	return strings.Join(out, "/"), nil
}
