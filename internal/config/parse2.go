package config

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
)

// fileJSONv2 is a format-2 config as stored. Params and Slots stay raw:
// their exact bytes are authenticated by the MAC (and Params, with each
// header, by every slot's wrap).
type fileJSONv2 struct {
	Creator string
	Params  json.RawMessage
	// SlotParams: the Params the slots were sealed under, when Params
	// changed since (UpgradeParams, features.go); absent otherwise.
	SlotParams json.RawMessage
	Slots      json.RawMessage
	// Epoch and OldEpochs: the KeyEpochs flag only (epochs.go).
	Epoch     *uint32
	OldEpochs []byte
	MAC       []byte
}

// paramsJSONv2 is format 2's Params object: format 1's without KDF (which
// moved into password slots) and Reverse (format 2 is forward-only).
type paramsJSONv2 struct {
	FormatVersion int
	FeatureFlags  []string
	Cipher        string
	ChunkSize     int
	// VaultID is decoded by decodeVaultID (strict: no null, no "").
	VaultID json.RawMessage `json:",omitempty"`
}

// slotJSON is one element of the Slots array.
type slotJSON struct {
	Header  json.RawMessage
	Wrapped []byte
}

// macSize is the stored size of the config MAC (HMAC-SHA256).
const macSize = 32

// parseV2 decodes strictly and validates a format-2 config. The key check
// (checkKeys) has already run on data.
func parseV2(data []byte) (*Config, error) {
	var f fileJSONv2
	if err := decodeStrict(data, &f); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	if len(f.Params) == 0 || len(f.Slots) == 0 {
		return nil, fmt.Errorf("%w: no Params or no Slots", ErrCorrupt)
	}
	p, err := decodeParamsV2(f.Params)
	if err != nil {
		return nil, err
	}
	if f.SlotParams != nil {
		if err := decodeSlotParams(f.SlotParams, p); err != nil {
			return nil, err
		}
	}
	var elems []slotJSON
	if err := decodeStrict(f.Slots, &elems); err != nil {
		return nil, fmt.Errorf("%w: Slots: %w", ErrCorrupt, err)
	}
	slots := make([]Slot, 0, len(elems))
	for i, e := range elems {
		if len(e.Header) == 0 {
			return nil, fmt.Errorf("%w: key slot %d has no Header", ErrCorrupt, i)
		}
		var h SlotHeader
		if err := decodeStrict(e.Header, &h); err != nil {
			return nil, fmt.Errorf("%w: key slot %d: %w", ErrCorrupt, i, err)
		}
		slots = append(slots, Slot{Header: h, Wrapped: e.Wrapped, rawHeader: append([]byte(nil), e.Header...)})
	}
	if err := validateSlots(slots); err != nil {
		return nil, err
	}
	if len(f.MAC) != macSize {
		return nil, fmt.Errorf("%w: MAC is %d bytes, want %d", ErrCorrupt, len(f.MAC), macSize)
	}
	ep, err := parseEpochs(p, f.Epoch, f.OldEpochs)
	if err != nil {
		return nil, err
	}
	return &Config{
		epochs:    ep,
		Creator:   f.Creator,
		Params:    p,
		Slots:     slots,
		MAC:       f.MAC,
		rawParams: append([]byte(nil), f.Params...),
		rawSlots:  append([]byte(nil), f.Slots...),
		raw:       append([]byte(nil), data...),

		rawSlotParams: bytes.Clone([]byte(f.SlotParams)),
	}, nil
}

// decodeParamsV2 decodes and validates format 2's Params.
func decodeParamsV2(raw []byte) (Params, error) {
	var pj paramsJSONv2
	if err := decodeStrict(raw, &pj); err != nil {
		return Params{}, fmt.Errorf("%w: Params: %w", ErrCorrupt, err)
	}
	vid, err := decodeVaultID(pj.VaultID)
	if err != nil {
		return Params{}, err
	}
	p := Params{FormatVersion: pj.FormatVersion, FeatureFlags: pj.FeatureFlags, Cipher: pj.Cipher, ChunkSize: pj.ChunkSize, VaultID: vid}
	if p.FormatVersion != FormatVersion2 {
		return Params{}, fmt.Errorf("%w: FormatVersion %d in a format-2 config", ErrCorrupt, p.FormatVersion)
	}
	if err := p.Validate(); err != nil {
		return Params{}, err
	}
	return p, nil
}

// encodeParamsV2 is the canonical encoding of fresh format-2 Params.
func encodeParamsV2(p Params) ([]byte, error) {
	pj := paramsJSONv2{FormatVersion: p.FormatVersion, FeatureFlags: p.FeatureFlags, Cipher: p.Cipher, ChunkSize: p.ChunkSize}
	if p.VaultID != nil {
		vid, err := json.Marshal(p.VaultID) // a base64 string
		if err != nil {
			return nil, fmt.Errorf("config: encode params: %w", err)
		}
		pj.VaultID = vid
	}
	raw, err := json.MarshalIndent(pj, "\t", "\t")
	if err != nil {
		return nil, fmt.Errorf("config: encode params: %w", err)
	}
	return raw, nil
}

// encodeHeader is the canonical encoding of a fresh slot header, indented
// to sit inside the Slots array.
func encodeHeader(h SlotHeader) ([]byte, error) {
	raw, err := json.MarshalIndent(h, "\t\t\t", "\t")
	if err != nil {
		return nil, fmt.Errorf("config: encode slot header: %w", err)
	}
	return raw, nil
}

// encodeSlots is the Slots array of slots, each header written as its
// exact stored bytes (its wrap's associated data).
func encodeSlots(slots []Slot) []byte {
	var b bytes.Buffer
	b.WriteString("[")
	for i, s := range slots {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString("\n\t\t{\n\t\t\t\"Header\": ")
		b.Write(s.rawHeader)
		b.WriteString(",\n\t\t\t\"Wrapped\": \"")
		b.WriteString(base64.StdEncoding.EncodeToString(s.Wrapped))
		b.WriteString("\"\n\t\t}")
	}
	b.WriteString("\n\t]")
	return b.Bytes()
}

// marshalV2 encodes a format-2 config as stored: Params and Slots as their
// exact bytes.
func (c *Config) marshalV2() ([]byte, error) {
	if len(c.rawParams) == 0 || len(c.rawSlots) == 0 {
		return nil, errors.New("config: marshal: no stored Params or Slots (make configs with CreateV2 or Parse)")
	}
	stored, err := decodeParamsV2(c.rawParams)
	if err != nil {
		return nil, fmt.Errorf("config: marshal: %w", err)
	}
	if !c.paramsAre(stored) {
		return nil, errors.New("config: marshal: Params changed in memory")
	}
	if !bytes.Equal(encodeSlots(c.Slots), c.rawSlots) && !slotsMatchRaw(c.Slots, c.rawSlots) {
		return nil, errors.New("config: marshal: Slots changed in memory without AddSlot/RemoveSlot/ReplaceSlot")
	}
	return c.layout(func(buf *bytes.Buffer) {
		if c.rawSlotParams != nil {
			buf.WriteString(",\n\t\"SlotParams\": ")
			buf.Write(c.rawSlotParams)
		}
		buf.WriteString(",\n\t\"Slots\": ")
		buf.Write(c.rawSlots)
		c.epochs.write(buf)
		buf.WriteString(",\n\t\"MAC\": \"")
		buf.WriteString(base64.StdEncoding.EncodeToString(c.MAC))
		buf.WriteString("\"")
	})
}

// slotsMatchRaw reports whether raw (a stored Slots array, possibly laid
// out differently from encodeSlots) holds exactly slots.
func slotsMatchRaw(slots []Slot, raw []byte) bool {
	var elems []slotJSON
	if decodeStrict(raw, &elems) != nil || len(elems) != len(slots) {
		return false
	}
	for i, e := range elems {
		if !bytes.Equal(e.Header, slots[i].rawHeader) || !bytes.Equal(e.Wrapped, slots[i].Wrapped) {
			return false
		}
	}
	return true
}
