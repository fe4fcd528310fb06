package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// fileJSON is the outer object as stored. Params stays raw: its exact bytes
// are authenticated by the key wrap.
type fileJSON struct {
	Creator      string
	Params       json.RawMessage
	EncryptedKey []byte
}

// fieldNames is every object key the format defines, at any level, spelled
// exactly. encoding/json matches keys case-insensitively; this list (together
// with DisallowUnknownFields) makes the match exact.
var fieldNames = map[string]bool{
	"Creator": true, "Params": true, "EncryptedKey": true,
	"FormatVersion": true, "FeatureFlags": true, "Cipher": true, "ChunkSize": true, "KDF": true, "Reverse": true,
	"Algorithm": true, "Salt": true, "Time": true, "MemoryKiB": true, "Threads": true,
	"VaultID": true, "SlotParams": true, // format 2 features (features.go)
	// Format 2 (slots.go): which of them an object may hold is checked by
	// the strict decode into its type.
	"Slots": true, "MAC": true, "Header": true, "Wrapped": true,
	"ID": true, "Type": true, "Label": true, "Recipient": true, "AgeFile": true,
	"Epoch": true, "OldEpochs": true, // KeyEpochs (epochs.go)
}

// Parse decodes strictly and validates a config file's bytes.
func Parse(data []byte) (*Config, error) {
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("%w: %d bytes is too large for a config file", ErrCorrupt, len(data))
	}
	// Look at the version before the strict decode, so that a newer vault
	// (which may have fields this build does not know) gets a clear message.
	var peek struct{ Params struct{ FormatVersion int } }
	if json.Unmarshal(data, &peek) == nil && peek.Params.FormatVersion > FormatVersion {
		return nil, futureVersion(peek.Params.FormatVersion)
	}
	if err := checkKeys(data); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	if peek.Params.FormatVersion == FormatVersion2 {
		return parseV2(data)
	}
	var f fileJSON
	if err := decodeStrict(data, &f); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	if len(f.Params) == 0 {
		return nil, fmt.Errorf("%w: no Params", ErrCorrupt)
	}
	var p Params
	if err := decodeStrict(f.Params, &p); err != nil {
		return nil, fmt.Errorf("%w: Params: %w", ErrCorrupt, err)
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if len(f.EncryptedKey) != EncryptedKeySize {
		return nil, fmt.Errorf("%w: EncryptedKey is %d bytes, want %d", ErrCorrupt, len(f.EncryptedKey), EncryptedKeySize)
	}
	return &Config{
		Creator:      f.Creator,
		Params:       p,
		EncryptedKey: f.EncryptedKey,
		rawParams:    append([]byte(nil), f.Params...),
		raw:          append([]byte(nil), data...),
	}, nil
}

// decodeStrict decodes exactly one JSON value, refusing unknown fields at
// every level and anything after the value.
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("trailing data after the JSON object")
	}
	return nil
}

// checkKeys walks the token stream and refuses a key that is not spelled
// exactly as the format defines it, a key repeated within one object (which
// encoding/json would silently resolve to the last one), and a top level
// that is not exactly one object.
func checkKeys(data []byte) error {
	type frame struct {
		object    bool
		expectKey bool
		keys      map[string]bool
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	var stack []*frame
	topValues := 0
	valueDone := func() {
		if len(stack) == 0 {
			topValues++
			return
		}
		if top := stack[len(stack)-1]; top.object {
			top.expectKey = true
		}
	}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if len(stack) > 0 {
			top := stack[len(stack)-1]
			if top.object && top.expectKey {
				if key, ok := tok.(string); ok {
					if !fieldNames[key] {
						return fmt.Errorf("unknown field %q", key)
					}
					if top.keys[key] {
						return fmt.Errorf("field %q appears twice", key)
					}
					top.keys[key] = true
					top.expectKey = false
					continue
				}
			}
		}
		if len(stack) == 0 {
			if d, ok := tok.(json.Delim); !ok || d != '{' || topValues > 0 {
				return errors.New("config must be exactly one JSON object")
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{object: true, expectKey: true, keys: map[string]bool{}})
		case json.Delim('['):
			stack = append(stack, &frame{})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			valueDone()
		default:
			valueDone()
		}
	}
	if topValues != 1 {
		return errors.New("config must be exactly one JSON object")
	}
	return nil
}

// encodeParams is the canonical encoding of fresh Params: indented to sit
// inside the file's outer object.
func encodeParams(p Params) ([]byte, error) {
	raw, err := json.MarshalIndent(p, "\t", "\t")
	if err != nil {
		return nil, fmt.Errorf("config: encode params: %w", err)
	}
	return raw, nil
}
