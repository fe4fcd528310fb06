// Package reverse derives the identifiers and nonces of reverse mode
// (docs/reverse.md): directory IDs, file IDs, chunk nonces and symlink
// nonces are HMAC-SHA256 values of the reverse key over a distinct label and
// the plaintext path, so the same plaintext tree gives the same ciphertext
// view on every mount.
//
// Everything here is deterministic on purpose. What that reveals is listed
// in docs/reverse.md ("What determinism leaks").
package reverse

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"strings"

	"github.com/encryptfs/encryptfs/internal/crypto/content"
)

// Labels separate the derivations. Each is followed by a NUL byte in the
// HMAC input. Why this is safe: a label is a fixed prefix that no other
// derivation's input starts with, so no two purposes ever share an HMAC
// input, and HMAC-SHA256 outputs for distinct inputs are independent.
const (
	LabelDirID   = "dirid"
	LabelFileID  = "fileid"
	LabelNonce   = "nonce"
	LabelSymlink = "symlink"
	LabelInode   = "inode"
)

// Sizes of the derived values.
const (
	KeySize          = 32
	DirIDSize        = 16
	ChunkNonceSize   = 16 // the stored nonce of an aes-256-siv chunk
	SymlinkNonceSize = 24 // XChaCha20-Poly1305
)

// Errors.
var (
	// ErrKeySize reports a reverse key that is not KeySize bytes.
	ErrKeySize = errors.New("reverse: key must be 32 bytes")
	// ErrPath reports a relative path that is not in canonical form.
	ErrPath = errors.New("reverse: path must be relative and clean (\"\" is the root)")
)

// Deriver computes reverse-mode IDs and nonces. Safe for concurrent use.
type Deriver struct{ key []byte }

// New takes the 32-byte reverse key (keys.Keys.Reverse) and keeps a copy.
func New(key []byte) (*Deriver, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("%w (got %d)", ErrKeySize, len(key))
	}
	return &Deriver{key: append([]byte(nil), key...)}, nil
}

// CheckPath reports whether rel is a canonical relative plaintext path:
// "" for the root, else slash-separated components with no "", "." or ".."
// and no NUL. Derivations are only unambiguous for canonical paths ("a//b"
// and "a/b" would otherwise be two IDs for one directory).
func CheckPath(rel string) error {
	if rel == "" {
		return nil
	}
	if strings.IndexByte(rel, 0) >= 0 {
		return fmt.Errorf("%w: %q", ErrPath, rel)
	}
	for _, c := range strings.Split(rel, "/") {
		if c == "" || c == "." || c == ".." {
			return fmt.Errorf("%w: %q", ErrPath, rel)
		}
	}
	return nil
}

// mac starts an HMAC-SHA256 with label ‖ 0x00 already written.
func (d *Deriver) mac(label string) hash.Hash {
	m := hmac.New(sha256.New, d.key)
	m.Write([]byte(label))
	m.Write([]byte{0})
	return m
}

// DirID derives the directory ID of the plaintext directory at rel
// (CheckPath form; "" is the root): HMAC(R, "dirid" ‖ 0 ‖ rel)[:16].
//
// Why this is safe: dirIDs are public in forward mode too (stored in clear);
// they only need to differ between directories, which distinct paths give
// with overwhelming probability (a 128-bit PRF output).
func (d *Deriver) DirID(rel string) []byte {
	m := d.mac(LabelDirID)
	m.Write([]byte(rel))
	return m.Sum(nil)[:DirIDSize]
}

// FileID derives the file ID of the plaintext file at rel:
// HMAC(R, "fileid" ‖ 0 ‖ rel)[:16].
//
// Why this is safe: the fileID selects the per-file key and is bound into
// every chunk's associated data; distinct paths get independent keys. A file
// replaced at the same path keeps its ID (and key): with SIV that leaks only
// equality of identical chunks at the same index (docs/reverse.md).
func (d *Deriver) FileID(rel string) content.FileID {
	m := d.mac(LabelFileID)
	m.Write([]byte(rel))
	var id content.FileID
	copy(id[:], m.Sum(nil))
	return id
}

// ChunkNonce derives the stored nonce of chunk index of file id:
// HMAC(R, "nonce" ‖ 0 ‖ fileID ‖ uint64 BE index)[:16]. For aes-256-siv only.
//
// Why this is safe: AES-SIV is misuse resistant; with a repeated nonce it is
// deterministic authenticated encryption, which reveals only that two
// (key, AD, nonce, plaintext) inputs are identical, i.e. that the same chunk
// of the same file holds the same bytes in two versions.
func (d *Deriver) ChunkNonce(id content.FileID, index uint64) []byte {
	m := d.mac(LabelNonce)
	m.Write(id[:])
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], index)
	m.Write(b[:])
	return m.Sum(nil)[:ChunkNonceSize]
}

// SymlinkNonce derives the XChaCha20-Poly1305 nonce of a symlink blob:
// HMAC(R, "symlink" ‖ 0 ‖ dirID ‖ name ‖ 0 ‖ target)[:24]. name cannot
// contain NUL, so the input is unambiguous (dirID has a fixed size).
//
// Why this is safe: the nonce is a PRF of the whole sealed message (key,
// associated data dirID ‖ name, and plaintext target), so two different
// messages get the same nonce only with probability 2^-192 per pair, and the
// same message always gives the same blob, which is all an observer learns.
func (d *Deriver) SymlinkNonce(dirID []byte, name, target string) []byte {
	m := d.mac(LabelSymlink)
	m.Write(dirID)
	m.Write([]byte(name))
	m.Write([]byte{0})
	m.Write([]byte(target))
	return m.Sum(nil)[:SymlinkNonceSize]
}

// InodeNumber derives the 64-bit number the view shows for the object of
// kind kind (a byte the caller defines) at rel:
// HMAC(R, "inode" ‖ 0 ‖ kind ‖ rel)[:8] as a big-endian uint64. rel cannot
// contain NUL, but kind is a fixed-size prefix, so the input is unambiguous
// anyway.
//
// Why this is safe: inode numbers are visible to anyone who sees the view
// (stat, ls -i, rsync); an unkeyed hash of the path (FNV-64a until this
// derivation) let them test guesses of plaintext paths offline. A PRF under
// the reverse key reveals nothing about rel without the key, and its own
// label keeps it independent of the IDs and nonces above. Inode numbers are
// never stored, so this is not part of the on-disk format.
func (d *Deriver) InodeNumber(kind byte, rel string) uint64 {
	m := d.mac(LabelInode)
	m.Write([]byte{kind})
	m.Write([]byte(rel))
	return binary.BigEndian.Uint64(m.Sum(nil)[:8])
}

// Wipe overwrites the deriver's copy of the key. Best effort at unmount.
func (d *Deriver) Wipe() { clear(d.key) }
