package keyslot

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// Errors of the credentials themselves (not of the vault).
var (
	// ErrKeyfile: a keyfile shorter than MinKeyfile or longer than
	// MaxKeyfile bytes.
	ErrKeyfile = errors.New("keyslot: a keyfile must hold 16 bytes to 1 MiB")
	// ErrPaperKey: a recovery key (or master key) typed back that is not
	// 64 hex digits.
	ErrPaperKey = errors.New("keyslot: a recovery key is 64 hex digits (grouping optional)")
	// ErrIdentity: an age identity file that does not parse or decrypt.
	ErrIdentity = errors.New("not a usable age identity file")
	// ErrRecipient: an age recipient that does not parse, or whose plugin
	// failed to seal a slot.
	ErrRecipient = errors.New("not a usable age recipient")
	// ErrLabel: a slot label longer than config.MaxLabel bytes or with
	// control or invisible characters.
	ErrLabel = errors.New("a label is at most 64 bytes of printable text")
)

// Keyfile bounds. Why a floor: the keyfile is the only secret of its slot
// and is not stretched (HKDF, not Argon2id), so it must itself be a key;
// 16 bytes of random data is 128 bits. A file of 16 chosen bytes is no
// better than a password, which the floor cannot tell; the docs say to use
// random bytes (head -c 32 /dev/urandom). Why a ceiling: the file is read
// into memory whole.
const (
	MinKeyfile = 16
	MaxKeyfile = 1 << 20
)

func checkKeyfile(n int) error {
	if n < MinKeyfile || n > MaxKeyfile {
		return fmt.Errorf("%w (this one: %d bytes)", ErrKeyfile, n)
	}
	return nil
}

// ReadKeyfile reads a keyfile: its whole contents, 16 bytes to 1 MiB (a
// larger file is refused without reading it all).
func ReadKeyfile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("keyslot: keyfile: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxKeyfile+1))
	if err != nil {
		return nil, fmt.Errorf("keyslot: keyfile %s: %w", path, err)
	}
	if err := checkKeyfile(len(data)); err != nil {
		clear(data)
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return data, nil
}

// RecoveryKeySize is the size of a recovery key.
const RecoveryKeySize = 32

// NewRecoveryKey draws a recovery key from rand. The caller shows it once
// (FormatPaperKey), adds its slot (NewSlot{Type: recovery}) and clears it.
func NewRecoveryKey(rand io.Reader) ([]byte, error) {
	k := make([]byte, RecoveryKeySize)
	if _, err := io.ReadFull(rand, k); err != nil {
		return nil, fmt.Errorf("keyslot: reading random recovery key: %w", err)
	}
	return k, nil
}

// FormatPaperKey renders a 32-byte key as lowercase hex in eight groups of
// eight digits joined by dashes, on one line (71 characters, indented by
// four): the form encryptfs init prints the master key and recovery keys
// in, easy to copy onto paper, and pasted back whole (a key printed over
// two lines was pasted half into the prompt and half into the shell).
func FormatPaperKey(key []byte) string {
	h := hex.EncodeToString(key)
	groups := make([]string, 0, (len(h)+7)/8)
	for i := 0; i < len(h); i += 8 {
		groups = append(groups, h[i:min(i+8, len(h))])
	}
	return "    " + strings.Join(groups, "-")
}

// ParsePaperKey accepts the paper form back: 64 hex digits with any
// spaces, dashes or line breaks between them (as the CLI's master key
// parser does).
func ParsePaperKey(s []byte) ([]byte, error) {
	var digits []byte
	for _, c := range s {
		switch c {
		case ' ', '-', '\t', '\n', '\r':
		default:
			digits = append(digits, c)
		}
	}
	defer clear(digits)
	key := make([]byte, hex.DecodedLen(len(digits)))
	if _, err := hex.Decode(key, digits); err != nil || len(key) != RecoveryKeySize {
		clear(key)
		return nil, ErrPaperKey
	}
	return key, nil
}

// FromFile sorts the bytes of a credential file of unknown kind (a
// systemd credential, $CREDENTIALS_DIRECTORY/name) into cr: an age
// identity file (IsIdentityFile) becomes identities; anything else is
// offered both as a keyfile (if it is long enough) and as a password (its
// first line without the line ending). Why both: nothing in the bytes
// tells a password from a keyfile, and trying one more credential is
// safe: each slot type derives its secret under its own label, so a
// credential can only open a slot of its own type; the cost is one
// Argon2id run per password slot when nothing else opened. data is
// copied; the caller wipes its own.
func FromFile(data []byte, o IdentityOptions, cr *Credentials) error {
	if IsIdentityFile(data) {
		ids, err := ParseIdentities(data, o)
		if err != nil {
			return err
		}
		cr.Identities = append(cr.Identities, ids...)
		return nil
	}
	if checkKeyfile(len(data)) == nil {
		cr.Keyfiles = append(cr.Keyfiles, bytes.Clone(data))
	}
	if cr.Password == nil {
		line, _, _ := bytes.Cut(data, []byte("\n"))
		pw := bytes.Clone(bytes.TrimSuffix(line, []byte("\r")))
		if len(pw) > 0 {
			cr.Password = func() ([]byte, error) { return bytes.Clone(pw), nil }
		}
	}
	return nil
}
