package engine

import (
	"bytes"

	"github.com/encryptfs/encryptfs/internal/crypto/meta"
	"github.com/encryptfs/encryptfs/internal/crypto/names"
)

// encName returns the encrypted name of rel's base name in its directory
// and the backing (view) name: the long-name form when it is too long.
func (v *ReverseView) encName(rel string) (enc, viewName string, long bool, err error) {
	dir, base := splitRel(rel)
	enc, err = v.r.names.Encrypt(v.r.derive.DirID(dir), base)
	if err != nil {
		return "", "", false, err
	}
	viewName, long = names.Backing(enc)
	return enc, viewName, long, nil
}

// ViewName returns the name rel's base name shows in its directory.
func (v *ReverseView) ViewName(rel string) (string, error) {
	_, viewName, _, err := v.encName(rel)
	return viewName, err
}

// linkBlob encrypts the target of the plaintext symlink rel bound to its
// directory's derived ID and its name, with the derived nonce.
func (v *ReverseView) linkBlob(rel, target string) ([]byte, error) {
	dir, base := splitRel(rel)
	dirID := v.r.derive.DirID(dir)
	nonce := v.r.derive.SymlinkNonce(dirID, base, target)
	return v.r.links.Seal(dirID, base, target, bytes.NewReader(nonce))
}

// viewTarget is the view's target of symlink rel: the encoded blob, or the
// long-target marker when the blob lives in a sidecar.
func (v *ReverseView) viewTarget(rel string) (target string, blob []byte, sidecar bool, err error) {
	plain, err := v.readlink(rel)
	if err != nil {
		return "", nil, false, err
	}
	blob, err = v.linkBlob(rel, plain)
	if err != nil {
		return "", nil, false, err
	}
	target, sidecar = meta.EncodeTarget(blob)
	return target, blob, sidecar, nil
}

// Target is the view's target of symlink rel: its plaintext target sealed
// and encoded, or the long-target marker when the sealed target is shown
// in a sidecar.
func (v *ReverseView) Target(rel string) (string, error) {
	target, _, _, err := v.viewTarget(rel)
	return target, err
}

// Content computes the content of a virtual file of kind k describing rel.
func (v *ReverseView) Content(k ViewKind, rel string) ([]byte, error) {
	switch k {
	case ViewDirID:
		return v.r.derive.DirID(rel), nil
	case ViewNameSidecar:
		enc, _, long, err := v.encName(rel)
		if err != nil {
			return nil, err
		}
		if !long {
			return nil, ErrStale
		}
		return []byte(enc), nil
	case ViewLinkSidecar:
		_, blob, sidecar, err := v.viewTarget(rel)
		if err != nil {
			return nil, err
		}
		if !sidecar {
			return nil, ErrStale // the target got short
		}
		return blob, nil
	case ViewConfig:
		return v.config, nil
	}
	return nil, ErrNotVirtual
}
