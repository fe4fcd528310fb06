package fresh

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
)

// Kind is what a record says a name is.
type Kind byte

// The kinds of record.
const (
	KindFile    Kind = 'f' // regular file: ObjectID is its fileID (zero for a 0-byte file)
	KindDir     Kind = 'd' // directory: ObjectID is its dirID
	KindSymlink Kind = 'l' // symlink: ObjectID is SHA-256(backing target)[0:16]
	KindOther   Kind = 'o' // fifo, socket, device: ObjectID zero
	KindDeleted Kind = 'x' // tombstone: the name was removed
)

func (k Kind) valid() bool {
	switch k {
	case KindFile, KindDir, KindSymlink, KindOther, KindDeleted:
		return true
	}
	return false
}

// Stamp is a device's counter, naming which device.
type Stamp struct {
	Device  [IDSize]byte
	Counter uint64
}

// Record is what one device last vouched for about one backing name of a
// directory.
type Record struct {
	Name     string // backing name (encrypted name, or the long-name hash name)
	Kind     Kind
	ObjectID [IDSize]byte
	Gen      uint64       // file header gen (format v2 file roots; 0 before)
	Xattrs   [IDSize]byte // digest of the backing xattrs (zero: none)
	Stamp    uint64       // the writing device's counter when this record changed
	// Over are the other devices' records of this name this one replaces
	// (their device and stamp): a version vector per name, so that sync
	// order never decides which record is current.
	Over []Stamp
}

// Manifest is one device's records of one directory.
type Manifest struct {
	Device  [IDSize]byte
	DirID   [IDSize]byte
	Counter uint64   // the device's counter when this manifest was written
	Records []Record // sorted by Name, unique
}

// EpochEntry commits to one manifest of the device.
type EpochEntry struct {
	DirID   [IDSize]byte
	Counter uint64
	Hash    [HashSize]byte
}

// Epoch is a device's epoch file: its counter and its manifests.
type Epoch struct {
	Device    [IDSize]byte
	Counter   uint64
	Manifests []EpochEntry // sorted by DirID, unique
}

const (
	manifestMagic = "EFSM"
	epochMagic    = "EFSE"
	fileVersion   = 1
	maxOver       = 255
	// MaxFileSize bounds what a reader loads: 64 MiB (a directory of
	// about 600,000 entries, or as many directories in an epoch).
	MaxFileSize = 64 << 20
)

// MarshalManifest sorts m's records and returns the MAC'd file.
func (k *Keyed) MarshalManifest(m *Manifest) ([]byte, error) {
	slices.SortFunc(m.Records, func(a, b Record) int { return cmpString(a.Name, b.Name) })
	var b bytes.Buffer
	b.WriteString(manifestMagic)
	b.WriteByte(fileVersion)
	b.Write(m.Device[:])
	b.Write(m.DirID[:])
	b.Write(binary.BigEndian.AppendUint64(nil, m.Counter))
	b.Write(binary.BigEndian.AppendUint32(nil, uint32(len(m.Records))))
	for i, r := range m.Records {
		if i > 0 && r.Name == m.Records[i-1].Name {
			return nil, fmt.Errorf("fresh: two records of %q", r.Name)
		}
		if len(r.Name) == 0 || len(r.Name) > 0xffff || !r.Kind.valid() || len(r.Over) > maxOver {
			return nil, fmt.Errorf("fresh: record %q cannot be stored", r.Name)
		}
		b.Write(binary.BigEndian.AppendUint16(nil, uint16(len(r.Name))))
		b.WriteString(r.Name)
		b.WriteByte(byte(r.Kind))
		b.Write(r.ObjectID[:])
		b.Write(binary.BigEndian.AppendUint64(nil, r.Gen))
		b.Write(r.Xattrs[:])
		b.Write(binary.BigEndian.AppendUint64(nil, r.Stamp))
		b.WriteByte(byte(len(r.Over)))
		for _, o := range r.Over {
			b.Write(o.Device[:])
			b.Write(binary.BigEndian.AppendUint64(nil, o.Counter))
		}
	}
	return k.seal(manifestDomain, b.Bytes()), nil
}

// ParseManifest verifies and parses a manifest file.
func (k *Keyed) ParseManifest(file []byte) (*Manifest, error) {
	if len(file) > MaxFileSize {
		return nil, ErrMalformed
	}
	body, err := k.open(manifestDomain, file)
	if err != nil {
		return nil, err
	}
	r := reader{b: body}
	if string(r.next(4)) != manifestMagic || r.byte() != fileVersion {
		return nil, ErrMalformed
	}
	m := &Manifest{}
	copy(m.Device[:], r.next(IDSize))
	copy(m.DirID[:], r.next(IDSize))
	m.Counter = r.u64()
	n := r.u32()
	for i := uint32(0); i < n && r.ok(); i++ {
		var rec Record
		rec.Name = string(r.next(int(r.u16())))
		rec.Kind = Kind(r.byte())
		copy(rec.ObjectID[:], r.next(IDSize))
		rec.Gen = r.u64()
		copy(rec.Xattrs[:], r.next(IDSize))
		rec.Stamp = r.u64()
		for j, no := 0, int(r.byte()); j < no && r.ok(); j++ {
			var s Stamp
			copy(s.Device[:], r.next(IDSize))
			s.Counter = r.u64()
			rec.Over = append(rec.Over, s)
		}
		if rec.Name == "" || !rec.Kind.valid() || i > 0 && rec.Name <= m.Records[i-1].Name {
			return nil, ErrMalformed
		}
		m.Records = append(m.Records, rec)
	}
	if !r.ok() || len(r.b) != 0 {
		return nil, ErrMalformed
	}
	return m, nil
}

// MarshalEpoch sorts e's entries and returns the MAC'd file.
func (k *Keyed) MarshalEpoch(e *Epoch) ([]byte, error) {
	slices.SortFunc(e.Manifests, func(a, b EpochEntry) int { return bytes.Compare(a.DirID[:], b.DirID[:]) })
	var b bytes.Buffer
	b.WriteString(epochMagic)
	b.WriteByte(fileVersion)
	b.Write(e.Device[:])
	b.Write(binary.BigEndian.AppendUint64(nil, e.Counter))
	b.Write(binary.BigEndian.AppendUint32(nil, uint32(len(e.Manifests))))
	for i, m := range e.Manifests {
		if i > 0 && m.DirID == e.Manifests[i-1].DirID {
			return nil, fmt.Errorf("fresh: two epoch entries of one directory")
		}
		b.Write(m.DirID[:])
		b.Write(binary.BigEndian.AppendUint64(nil, m.Counter))
		b.Write(m.Hash[:])
	}
	return k.seal(epochDomain, b.Bytes()), nil
}

// ParseEpoch verifies and parses an epoch file.
func (k *Keyed) ParseEpoch(file []byte) (*Epoch, error) {
	if len(file) > MaxFileSize {
		return nil, ErrMalformed
	}
	body, err := k.open(epochDomain, file)
	if err != nil {
		return nil, err
	}
	r := reader{b: body}
	if string(r.next(4)) != epochMagic || r.byte() != fileVersion {
		return nil, ErrMalformed
	}
	e := &Epoch{}
	copy(e.Device[:], r.next(IDSize))
	e.Counter = r.u64()
	n := r.u32()
	for i := uint32(0); i < n && r.ok(); i++ {
		var m EpochEntry
		copy(m.DirID[:], r.next(IDSize))
		m.Counter = r.u64()
		copy(m.Hash[:], r.next(HashSize))
		if i > 0 && bytes.Compare(m.DirID[:], e.Manifests[i-1].DirID[:]) <= 0 {
			return nil, ErrMalformed
		}
		e.Manifests = append(e.Manifests, m)
	}
	if !r.ok() || len(r.b) != 0 {
		return nil, ErrMalformed
	}
	return e, nil
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// reader consumes a byte slice; after a short read every call returns
// zeros and ok is false.
type reader struct {
	b   []byte
	bad bool
}

func (r *reader) ok() bool { return !r.bad }

func (r *reader) next(n int) []byte {
	if r.bad || n > len(r.b) {
		r.bad = true
		return make([]byte, n)
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *reader) byte() byte  { return r.next(1)[0] }
func (r *reader) u16() uint16 { return binary.BigEndian.Uint16(r.next(2)) }
func (r *reader) u32() uint32 { return binary.BigEndian.Uint32(r.next(4)) }
func (r *reader) u64() uint64 { return binary.BigEndian.Uint64(r.next(8)) }
