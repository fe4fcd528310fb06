package config

import (
	"fmt"

	"github.com/encryptfs/encryptfs/internal/crypto/kdf"
	"github.com/encryptfs/encryptfs/internal/display"
)

// Slot types of format 2 (docs/format.md §3a). Each yields a 32-byte slot
// secret from a credential; the secret unwraps the slot's copy of the
// master key.
const (
	SlotPassword = "password" // Argon2id(password, the slot's KDF)
	SlotKeyfile  = "keyfile"  // HKDF(keyfile bytes, the slot's Salt)
	SlotRecovery = "recovery" // HKDF(32-byte paper recovery key, the slot's Salt)
	SlotAge      = "age"      // a random secret, age-encrypted to a recipient
)

// Bounds of format 2's slots. Why these: a config is read whole into
// memory and parsed before anything is authenticated, so each piece an
// attacker can grow has a limit far above any real value.
const (
	// MaxSlots: a vault needs a handful of ways in; 32 leaves room for a
	// team without letting a config grow without bound.
	MaxSlots = 32
	// MaxPasswordSlots bounds the password slots, the only ones whose
	// secret costs an Argon2id run: a password is tried on every password
	// slot, each run before the config MAC (keyed by the master key) can
	// say the slot was planted, so without this bound a storage attacker
	// who adds copies of slots makes every unlock run Argon2id up to
	// MaxSlots times (8 planted slots at the default cost: 18-31 s). A
	// config with more is refused while parsing, before any KDF
	// (docs/format.md §3a, "Bounds"): an unlock runs Argon2id at most this
	// often, each run within format 1's bounds and the memory limit.
	// People beyond a few share a vault through age, keyfile or recovery
	// slots, which cost an HKDF.
	MaxPasswordSlots = 4
	// MinSlotID and MaxSlotID: IDs are small, stable numbers the user
	// names slots by (key remove 3); 0 is never used.
	MinSlotID, MaxSlotID = 1, 255
	// MaxLabel: a label is a short display name, in bytes.
	MaxLabel = 64
	// MaxRecipient: an age recipient string; X25519 ones are 62
	// characters, post-quantum hybrid ones about 2 KB, plugin ones vary.
	MaxRecipient = 4096
	// MaxAgeFile: the age file holding a 32-byte secret is its header
	// (one stanza per recipient; an X25519 stanza is about 150 bytes, an
	// ML-KEM hybrid one about 1.6 KB, a plugin's usually less) plus 81
	// bytes of payload.
	MaxAgeFile = 8192
	// SlotSaltSize: the HKDF salt of keyfile and recovery slots, fresh per
	// slot, so that one keyfile in two slots or vaults gives unrelated
	// slot secrets.
	SlotSaltSize = 32
	// SlotSecretSize is the size of every slot secret.
	SlotSecretSize = 32
)

// MaxFileSize bounds how much of a config file is read. A format-1 config
// is under 1 KiB; a format-2 config with MaxSlots age slots at MaxAgeFile
// and MaxRecipient (base64 grows the age file by 4/3) stays under 512 KiB.
// A larger file is corrupt, not something to allocate for.
const MaxFileSize = 512 << 10

// SlotHeader is a slot's public part: its identity and the inputs of its
// slot secret's derivation. Its exact stored bytes are part of the slot's
// associated data, so none of it can be edited without the slot failing to
// open. Which fields a slot has depends on Type (ValidateSlot).
type SlotHeader struct {
	ID    int
	Type  string
	Label string
	// KDF: password slots only.
	KDF *kdf.Params `json:",omitempty"`
	// Salt: keyfile and recovery slots only (SlotSaltSize bytes).
	Salt []byte `json:",omitempty"`
	// Recipient: age slots only. The recipient string the slot was sealed
	// to, as given when it was added; informational (shown by key list),
	// never used to unlock.
	Recipient string `json:",omitempty"`
	// AgeFile: age slots only. The binary age file whose payload is the
	// slot secret.
	AgeFile []byte `json:",omitempty"`
}

// Slot is one stored key slot: its header and its wrapped master key.
type Slot struct {
	Header SlotHeader
	// Wrapped is nonce(12) ‖ AES-256-GCM(wrapKey, masterKey) ‖ tag(16)
	// (slotwrap.go).
	Wrapped []byte

	// rawHeader is the exact stored byte string of the "Header" object:
	// it is part of the wrap's associated data.
	rawHeader []byte
}

// RawHeader returns a copy of the exact stored bytes of the slot's header.
func (s Slot) RawHeader() []byte { return append([]byte(nil), s.rawHeader...) }

// Validate checks a slot header against its type: the fields its type
// needs, present and in bounds, and no others. Errors wrap ErrCorrupt.
func (h SlotHeader) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: key slot %d: %s", ErrCorrupt, h.ID, fmt.Sprintf(format, args...))
	}
	if h.ID < MinSlotID || h.ID > MaxSlotID {
		return bad("ID out of range %d..%d", MinSlotID, MaxSlotID)
	}
	// The label comes from the vault's storage and is shown on a
	// terminal: the one display rule (internal/display) decides.
	if len(h.Label) > MaxLabel || !display.Safe(h.Label) {
		return bad("label longer than %d bytes or with control or invisible characters", MaxLabel)
	}
	hasKDF, hasSalt, hasAge := h.KDF != nil, h.Salt != nil, h.Recipient != "" || h.AgeFile != nil
	switch h.Type {
	case SlotPassword:
		if !hasKDF || hasSalt || hasAge {
			return bad("a password slot has a KDF and nothing else")
		}
		if err := h.KDF.Validate(); err != nil {
			return bad("%v", err)
		}
	case SlotKeyfile, SlotRecovery:
		if hasKDF || !hasSalt || hasAge {
			return bad("a %s slot has a Salt and nothing else", h.Type)
		}
		if len(h.Salt) != SlotSaltSize {
			return bad("salt of %d bytes, want %d", len(h.Salt), SlotSaltSize)
		}
	case SlotAge:
		if hasKDF || hasSalt || len(h.AgeFile) == 0 || h.Recipient == "" {
			return bad("an age slot has an AgeFile, a Recipient and nothing else")
		}
		if len(h.AgeFile) > MaxAgeFile || len(h.Recipient) > MaxRecipient || !display.Safe(h.Recipient) {
			return bad("age file or recipient too large or not printable")
		}
	default:
		return bad("unknown type %q", h.Type)
	}
	return nil
}

// SlotByID returns the slot with ID id and its index in c.Slots.
func (c *Config) SlotByID(id int) (Slot, int, error) {
	for i, s := range c.Slots {
		if s.Header.ID == id {
			return s, i, nil
		}
	}
	return Slot{}, -1, fmt.Errorf("%w: %d", ErrUnknownSlot, id)
}

// validateSlots checks the slot set: 1..MaxSlots slots, each valid, IDs
// unique.
func validateSlots(slots []Slot) error {
	if len(slots) == 0 {
		return fmt.Errorf("%w: no key slots", ErrCorrupt)
	}
	if len(slots) > MaxSlots {
		return fmt.Errorf("%w: %w: %d (at most %d)", ErrCorrupt, ErrSlotLimit, len(slots), MaxSlots)
	}
	seen := map[int]bool{}
	passwords := 0
	for _, s := range slots {
		if s.Header.Type == SlotPassword {
			if passwords++; passwords > MaxPasswordSlots {
				return fmt.Errorf("%w: %w: more than %d password slots (each costs an Argon2id run before the config MAC can be checked)", ErrCorrupt, ErrSlotLimit, MaxPasswordSlots)
			}
		}
		if err := s.Header.Validate(); err != nil {
			return err
		}
		if seen[s.Header.ID] {
			return fmt.Errorf("%w: %w: %d", ErrCorrupt, ErrDuplicateSlot, s.Header.ID)
		}
		seen[s.Header.ID] = true
		if len(s.Wrapped) != EncryptedKeySize {
			return fmt.Errorf("%w: key slot %d: Wrapped is %d bytes, want %d", ErrCorrupt, s.Header.ID, len(s.Wrapped), EncryptedKeySize)
		}
	}
	return nil
}

// passwordSlots is the number of password slots in slots.
func passwordSlots(slots []Slot) int {
	n := 0
	for _, s := range slots {
		if s.Header.Type == SlotPassword {
			n++
		}
	}
	return n
}

// MaxKDFMemoryKiB is the largest Argon2id memory cost unlocking c with a
// password may need: Params.KDF's for format 1, the largest of the
// password slots' for format 2 (0 if it has none). The CLI compares it
// with the memory available before asking for a password (§3, "Memory
// bound before the MAC"); Unlock checks each slot's cost itself.
func (c *Config) MaxKDFMemoryKiB() uint32 {
	if !c.IsV2() {
		return c.Params.KDF.MemoryKiB
	}
	var m uint32
	for _, s := range c.Slots {
		if s.Header.KDF != nil && s.Header.KDF.MemoryKiB > m {
			m = s.Header.KDF.MemoryKiB
		}
	}
	return m
}
