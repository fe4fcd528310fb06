package fsck

import (
	"fmt"

	"github.com/encryptfs/encryptfs/internal/engine"
)

// plainXattr is one decrypted extended attribute, for the salvage copy.
type plainXattr struct {
	name  string
	value []byte
}

// symlink checks a symlink's target and copies it out when salvaging. It
// returns the name of the long-target sidecar the symlink uses, if any.
func (w *walker) symlink(dir *engine.InspectDir, ent entry, pl place, dest *destDir, salvName string) (sidecar string) {
	w.rep.Summary.Symlinks++
	bt, err := dir.ReadlinkRaw(ent.backing)
	if err != nil {
		w.add(Problem{Kind: KindIO, CipherPath: pl.cipher, PlainPath: pl.plain, Detail: fmt.Sprintf("readlink: %v", err)})
		return ""
	}
	sidecar = engine.SymlinkSidecar(ent.backing, bt)
	if !ent.named {
		// The target is bound to the plaintext name: without it the target
		// can be neither checked nor decrypted (the name is reported).
		return sidecar
	}
	target, err := dir.Readlink(ent.name)
	if err != nil {
		detail := fmt.Sprintf("target does not decrypt: %v", err)
		if sidecar != "" {
			detail += " (target sidecar " + sidecar + ")"
		}
		w.add(Problem{Kind: KindSymlink, CipherPath: pl.cipher, PlainPath: pl.plain, Detail: detail})
		return sidecar
	}
	if dest != nil {
		w.salv.symlink(w.rep, dest, salvName, target, ent.st, pl)
	}
	return sidecar
}

// xattrs checks every EncryptFS xattr of obj (under its ID) and returns
// the readable ones.
func (w *walker) xattrs(obj *engine.InspectObject, pl place) []plainXattr {
	if w.noXattrs {
		return nil
	}
	list, bad, err := obj.ListXattr()
	if err != nil {
		w.add(Problem{Kind: KindIO, CipherPath: pl.cipher, PlainPath: pl.plain, Detail: fmt.Sprintf("list xattrs: %v", err)})
		return nil
	}
	for _, bn := range bad {
		w.rep.Summary.Xattrs++
		w.add(Problem{Kind: KindXattrName, CipherPath: pl.cipher, PlainPath: pl.plain,
			Detail: fmt.Sprintf("xattr name %s does not decrypt", bn)})
	}
	var out []plainXattr
	for _, name := range list {
		w.rep.Summary.Xattrs++
		v, err := obj.GetXattr(name)
		if err != nil {
			w.add(Problem{Kind: KindXattrValue, CipherPath: pl.cipher, PlainPath: pl.plain,
				Detail: fmt.Sprintf("value of xattr %q does not decrypt: %v", name, err)})
			continue
		}
		out = append(out, plainXattr{name: name, value: v})
	}
	return out
}

// unverifiableXattrs reports EncryptFS xattrs on an object that has no ID
// to check them against.
func (w *walker) unverifiableXattrs(obj *engine.InspectObject, pl place, why string) {
	if w.noXattrs {
		return
	}
	all, err := obj.ListRawXattrs()
	if err != nil {
		return
	}
	for _, bn := range all {
		if engine.IsXattrName(bn) {
			w.rep.Summary.Xattrs++
			w.add(Problem{Kind: KindXattrName, CipherPath: pl.cipher, PlainPath: pl.plain,
				Detail: fmt.Sprintf("xattr %s cannot be checked: %s", bn, why)})
		}
	}
}

// salvageNode copies a fifo, socket or device node.
func (w *walker) salvageNode(dest *destDir, salvName string, ent entry, pl place) {
	if dest != nil {
		w.salv.node(w.rep, dest, salvName, ent.st, pl)
	}
}
