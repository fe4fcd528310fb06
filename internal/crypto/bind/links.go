package bind

import (
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
)

// The links file (docs/design/format-v2.md §4, docs/format.md §14 "Files
// with more names than header slots"). A file with more names than its
// header can bind keeps every binding in one file in the vault's root,
// encryptfs.links.<b64url(fileID)>, and says so with the header flag LINKS
// (content.FlagLinks, under the header MAC, with its binding slots zero):
//
//	off  size
//	  0     2  version u16 = 1
//	  2     4  epoch u32, reserved (0)
//	  6    16  fileID
//	 22     8  gen u64
//	 30     4  count u32, 1..MaxLinks
//	 34  16·n  bindings (bind.Sum of the file at each of its names)
//	  …    16  mac = HMAC-SHA256(K_links, LinksDomain ‖ bytes 0..34+16n)[0:16]
//
// Why each field:
//   - version: a later layout can be told apart without guessing.
//   - epoch: which master-key epoch's K_links made the MAC (design §3),
//     like the header's and the directory ID file's; 0 until epochs exist,
//     and a reader refuses anything else today.
//   - fileID, under the MAC: a links file copied or renamed from another
//     file's (a "foreign" one) fails, so contents cannot borrow another
//     file's names; the file name alone is not authenticated.
//   - gen: counts rewrites (a new links file starts at 1). Nothing checks
//     it against the header (that would need a header write per link): it
//     is what a freshness record (design §6) pins, and makes an older
//     version recognisable as older when one is reported.
//   - bindings, not places: fixed size, and the same values the header
//     slots hold, checked with the same constant-time Match; they say
//     nothing about which directories hold the names.
//   - count: the length is explicit and checked against the file's size,
//     so a truncated or extended file fails before the MAC is computed
//     over the wrong span.
//   - mac: under K_links, a key of its own (HKDF-Expand of K_bind with
//     label "encryptfs v2 links"), so no binding and no MAC of another
//     object is ever a valid links MAC; 16 bytes as the header's MAC
//     (a forgery is a 2^-128 guess per try).
//
// What it does not stop: an older links file of the same file put back
// (a rollback: it names places the file had, which is freshness, §6), and
// a links file deleted (the file then fails to open: EIO, and fsck
// reports it).
const (
	// LinksVersion is the links file's version.
	LinksVersion = 1
	// MaxLinks bounds a file's names (ext4's EXT4_LINK_MAX): a link
	// beyond it is EMLINK, and a links file stays under 1.1 MB.
	MaxLinks = 65000
	// LinksDomain prefixes the links MAC input; LinksLabel derives K_links.
	LinksDomain = "encryptfs v2 links"
	LinksLabel  = "encryptfs v2 links"
	// LinksPrefix starts a links file's name in the vault's root.
	LinksPrefix = "encryptfs.links."

	linksHeadSize = 2 + 4 + IDSize + 8 + 4
	linksMACSize  = 16
	// MaxLinksFileSize is the largest valid links file.
	MaxLinksFileSize = linksHeadSize + MaxLinks*Size + linksMACSize
)

// ErrBadLinks: a file's links file is missing, malformed, fails its MAC or
// belongs to another file. The file cannot be opened at any name
// (classified as corrupt: EIO); fsck reports it as bad-links.
var ErrBadLinks = errors.New("bind: links file missing, corrupt or of another file")

// LinkList is the content of a links file.
type LinkList struct {
	FileID   [IDSize]byte
	Gen      uint64
	Bindings []Binding
}

// Has reports whether b is in the list (constant time over all entries).
func (l *LinkList) Has(b Binding) bool {
	ok := 0
	for _, s := range l.Bindings {
		ok |= subtle.ConstantTimeCompare(s[:], b[:])
	}
	return ok == 1
}

// LinksName is the name of fileID's links file in the vault's root:
// LinksPrefix and the unpadded base64url of the ID (22 characters).
func LinksName(fileID []byte) string {
	return LinksPrefix + base64.RawURLEncoding.EncodeToString(fileID)
}

// ParseLinksName returns the file ID a links file's name carries.
func ParseLinksName(name string) ([]byte, bool) {
	if len(name) <= len(LinksPrefix) || name[:len(LinksPrefix)] != LinksPrefix {
		return nil, false
	}
	id, err := base64.RawURLEncoding.DecodeString(name[len(LinksPrefix):])
	if err != nil || len(id) != IDSize || LinksName(id) != name {
		return nil, false
	}
	return id, true
}

// linksKey derives K_links from K_bind. Why HKDF-Expand with a label of
// its own: K_bind is already a uniformly random HKDF output, so Expand is
// a PRF call, and the label separates this key from K_bind's own use.
func linksKey(bindKey []byte) ([]byte, error) {
	return hkdf.Expand(sha256.New, bindKey, LinksLabel, KeySize)
}

// SealLinks marshals l and appends its MAC. More than MaxLinks bindings,
// none, or Sum after Wipe are programmer errors and panic.
func (b *Binder) SealLinks(l LinkList) []byte {
	if len(l.Bindings) == 0 || len(l.Bindings) > MaxLinks {
		panic("bind: a links file holds 1..MaxLinks bindings")
	}
	out := make([]byte, linksHeadSize, linksHeadSize+len(l.Bindings)*Size+linksMACSize)
	binary.BigEndian.PutUint16(out[0:2], LinksVersion)
	copy(out[6:], l.FileID[:])
	binary.BigEndian.PutUint64(out[22:30], l.Gen)
	binary.BigEndian.PutUint32(out[30:34], uint32(len(l.Bindings)))
	for _, s := range l.Bindings {
		out = append(out, s[:]...)
	}
	mac, ok := b.linksMAC(out)
	if !ok {
		panic("bind: SealLinks after Wipe")
	}
	return append(out, mac...)
}

// OpenLinks checks and parses raw, the links file of fileID: its size
// against its count, the MAC (constant time) before anything else is
// trusted, then version, epoch and the file ID. Every failure is
// ErrBadLinks (ErrWiped after Wipe).
func (b *Binder) OpenLinks(raw, fileID []byte) (LinkList, error) {
	if len(raw) < linksHeadSize+Size+linksMACSize {
		return LinkList{}, fmt.Errorf("%w: %d bytes", ErrBadLinks, len(raw))
	}
	n := binary.BigEndian.Uint32(raw[30:34])
	if n == 0 || n > MaxLinks || len(raw) != linksHeadSize+int(n)*Size+linksMACSize {
		return LinkList{}, fmt.Errorf("%w: %d bytes for %d bindings", ErrBadLinks, len(raw), n)
	}
	body := raw[:len(raw)-linksMACSize]
	mac, ok := b.linksMAC(body)
	if !ok {
		return LinkList{}, ErrWiped
	}
	if !hmac.Equal(mac, raw[len(body):]) {
		return LinkList{}, fmt.Errorf("%w: MAC mismatch", ErrBadLinks)
	}
	if v := binary.BigEndian.Uint16(raw[0:2]); v != LinksVersion || binary.BigEndian.Uint32(raw[2:6]) != 0 {
		return LinkList{}, fmt.Errorf("%w: version %d", ErrBadLinks, v)
	}
	if subtle.ConstantTimeCompare(raw[6:22], fileID) != 1 {
		return LinkList{}, fmt.Errorf("%w: of another file", ErrBadLinks)
	}
	l := LinkList{Gen: binary.BigEndian.Uint64(raw[22:30]), Bindings: make([]Binding, n)}
	copy(l.FileID[:], raw[6:22])
	for i := range l.Bindings {
		copy(l.Bindings[i][:], raw[linksHeadSize+i*Size:])
	}
	return l, nil
}

// linksMAC is HMAC-SHA256(K_links, LinksDomain ‖ body)[0:16]; false after
// Wipe.
func (b *Binder) linksMAC(body []byte) ([]byte, bool) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.wiped {
		return nil, false
	}
	m := hmac.New(sha256.New, b.linksKey)
	m.Write([]byte(LinksDomain))
	m.Write(body)
	return m.Sum(nil)[:linksMACSize], true
}
