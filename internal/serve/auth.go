package serve

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"unicode"

	"golang.org/x/crypto/argon2"
)

// Authenticator checks a request's credentials. It returns the user
// name to log ("" for a token) and whether the request may go on.
type Authenticator interface {
	Authenticate(r *http.Request) (user string, ok bool)
	// Challenge is the WWW-Authenticate header of a 401.
	Challenge() string
}

// Argon2id cost of a password hash. The defaults are what adduser
// writes; the bounds are what a users file may ask for, so that a file
// someone planted cannot make every login take seconds or gigabytes
// (each verification allocates MemoryKiB, and verifications run at most
// maxVerifying at a time).
const (
	DefaultHashTime      = 2
	DefaultHashMemoryKiB = 64 * 1024
	DefaultHashThreads   = 1
	maxHashTime          = 8
	maxHashMemoryKiB     = 128 * 1024
	maxHashThreads       = 4
	minSaltLen, maxSalt  = 16, 64
	minHashLen, maxHash  = 16, 64
	maxUsers             = 1000
	maxUserName          = 64
	maxVerifying         = 2
	// MaxUsersFile bounds the users file the CLI reads.
	MaxUsersFile = 1 << 20
	// MaxTokenFile bounds the token file; minToken is the shortest token.
	MaxTokenFile = 4096
	minToken     = 16
)

// ErrUsersFile: a users file that does not parse or asks for a cost
// beyond the bounds.
var ErrUsersFile = errors.New("serve: users file")

// ErrToken: a token file that is empty or too short.
var ErrToken = errors.New("serve: token file")

// ErrUserName: a user name that a users file cannot hold.
var ErrUserName = errors.New("serve: user name")

// hashParams is one Argon2id hash in the PHC string form
// $argon2id$v=19$m=M,t=T,p=P$SALT$HASH (unpadded standard base64).
type hashParams struct {
	time, memoryKiB uint32
	threads         uint8
	salt, hash      []byte
}

// CheckUserName refuses names a users file line or a log line cannot
// carry: empty, longer than 64 bytes, with ':' or any space or control
// character.
func CheckUserName(name string) error {
	if name == "" || len(name) > maxUserName {
		return fmt.Errorf("%w: %q: 1 to %d bytes", ErrUserName, name, maxUserName)
	}
	for _, r := range name {
		if r == ':' || unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return fmt.Errorf("%w: %q: no ':', space or control character", ErrUserName, name)
		}
	}
	return nil
}

// HashLine is a users file line for name and password: an Argon2id hash
// with a fresh 16-byte salt from rnd, at the default cost.
func HashLine(rnd io.Reader, name string, password []byte) (string, error) {
	if err := CheckUserName(name); err != nil {
		return "", err
	}
	salt := make([]byte, 16)
	if _, err := io.ReadFull(rnd, salt); err != nil {
		return "", err
	}
	h := hashParams{time: DefaultHashTime, memoryKiB: DefaultHashMemoryKiB, threads: DefaultHashThreads, salt: salt}
	h.hash = h.derive(password, 32)
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("%s:$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", name, argon2.Version,
		h.memoryKiB, h.time, h.threads, b64.EncodeToString(h.salt), b64.EncodeToString(h.hash)), nil
}

// SetUser returns the users file data with name's line replaced by line
// (or added at the end).
func SetUser(data []byte, name, line string) []byte {
	var out bytes.Buffer
	found := false
	for l := range strings.Lines(string(data)) {
		n, _, _ := strings.Cut(strings.TrimRight(l, "\r\n"), ":")
		if n == name {
			if !found {
				out.WriteString(line + "\n")
			}
			found = true
			continue
		}
		out.WriteString(l)
		if !strings.HasSuffix(l, "\n") {
			out.WriteByte('\n')
		}
	}
	if !found {
		out.WriteString(line + "\n")
	}
	return out.Bytes()
}

func (h *hashParams) derive(password []byte, n int) []byte {
	return argon2.IDKey(password, h.salt, h.time, h.memoryKiB, h.threads, uint32(n))
}

// parseHash parses a PHC Argon2id string within the bounds.
func parseHash(s string) (*hashParams, error) {
	f := strings.Split(s, "$")
	if len(f) != 6 || f[0] != "" || f[1] != "argon2id" || f[2] != "v="+strconv.Itoa(argon2.Version) {
		return nil, errors.New("not an $argon2id$v=19$ hash")
	}
	var m, t, p uint64
	if _, err := fmt.Sscanf(f[3], "m=%d,t=%d,p=%d", &m, &t, &p); err != nil || f[3] != fmt.Sprintf("m=%d,t=%d,p=%d", m, t, p) {
		return nil, errors.New("parameters are not m=M,t=T,p=P")
	}
	if m < 8*p || m > maxHashMemoryKiB || t < 1 || t > maxHashTime || p < 1 || p > maxHashThreads {
		return nil, fmt.Errorf("cost m=%d,t=%d,p=%d beyond the bounds (m <= %d, t <= %d, p <= %d)", m, t, p, maxHashMemoryKiB, maxHashTime, maxHashThreads)
	}
	b64 := base64.RawStdEncoding
	salt, err1 := b64.DecodeString(f[4])
	hash, err2 := b64.DecodeString(f[5])
	if err := errors.Join(err1, err2); err != nil {
		return nil, err
	}
	if len(salt) < minSaltLen || len(salt) > maxSalt || len(hash) < minHashLen || len(hash) > maxHash {
		return nil, errors.New("salt or hash length out of bounds")
	}
	return &hashParams{time: uint32(t), memoryKiB: uint32(m), threads: uint8(p), salt: salt, hash: hash}, nil
}

// Users authenticates HTTP Basic credentials against a users file of
// Argon2id hashes (one "NAME:HASH" a line; # comments).
type Users struct {
	users map[string]*hashParams
	dummy *hashParams // verified for an unknown name, so it takes as long

	verifying chan struct{} // at most maxVerifying Argon2id runs at once
	cacheKey  []byte        // HMAC key of the cache, drawn per process
	mu        sync.Mutex
	verified  map[string][]byte // name -> HMAC(cacheKey, name, password) last verified
}

// ParseUsers parses a users file. rnd draws the key of the cache of
// verified passwords (so that a client does not pay Argon2id on each of
// its many requests).
func ParseUsers(data []byte, rnd io.Reader) (*Users, error) {
	u := &Users{users: map[string]*hashParams{}, verifying: make(chan struct{}, maxVerifying), verified: map[string][]byte{}}
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, hash, ok := strings.Cut(line, ":")
		if !ok {
			return nil, fmt.Errorf("%w: line %d: want NAME:HASH", ErrUsersFile, i+1)
		}
		if err := CheckUserName(name); err != nil {
			return nil, fmt.Errorf("%w: line %d: %w", ErrUsersFile, i+1, err)
		}
		h, err := parseHash(hash)
		if err != nil {
			return nil, fmt.Errorf("%w: line %d: %v", ErrUsersFile, i+1, err)
		}
		if _, dup := u.users[name]; dup {
			return nil, fmt.Errorf("%w: line %d: user %s given twice", ErrUsersFile, i+1, name)
		}
		if len(u.users) == maxUsers {
			return nil, fmt.Errorf("%w: more than %d users", ErrUsersFile, maxUsers)
		}
		u.users[name] = h
	}
	if len(u.users) == 0 {
		return nil, fmt.Errorf("%w: no users", ErrUsersFile)
	}
	u.cacheKey = make([]byte, 32)
	if _, err := io.ReadFull(rnd, u.cacheKey); err != nil {
		return nil, err
	}
	u.dummy = &hashParams{time: DefaultHashTime, memoryKiB: DefaultHashMemoryKiB, threads: DefaultHashThreads, salt: make([]byte, 16), hash: make([]byte, 32)}
	return u, nil
}

// Authenticate checks HTTP Basic credentials.
func (u *Users) Authenticate(r *http.Request) (string, bool) {
	name, pw, ok := r.BasicAuth()
	if !ok {
		return "", false
	}
	mac := hmac.New(sha256.New, u.cacheKey)
	mac.Write([]byte(name))
	mac.Write([]byte{0})
	mac.Write([]byte(pw))
	sum := mac.Sum(nil)
	u.mu.Lock()
	cached := u.verified[name]
	u.mu.Unlock()
	if cached != nil && hmac.Equal(cached, sum) {
		return name, true
	}
	h, known := u.users[name]
	if !known {
		h = u.dummy
	}
	select {
	case u.verifying <- struct{}{}:
	case <-r.Context().Done():
		return "", false
	}
	got := h.derive([]byte(pw), len(h.hash))
	<-u.verifying
	if subtle.ConstantTimeCompare(got, h.hash) != 1 || !known {
		return "", false
	}
	u.mu.Lock()
	u.verified[name] = sum
	u.mu.Unlock()
	return name, true
}

// Challenge asks for Basic credentials.
func (u *Users) Challenge() string { return `Basic realm="encryptfs", charset="UTF-8"` }

// Token authenticates "Authorization: Bearer TOKEN" against a token file.
type Token struct{ sum [sha256.Size]byte }

// ParseToken takes the token file's content: its first line, without
// surrounding white space, at least 16 bytes.
func ParseToken(data []byte) (*Token, error) {
	line, _, _ := strings.Cut(string(data), "\n")
	line = strings.TrimSpace(line)
	if len(line) < minToken {
		return nil, fmt.Errorf("%w: the token is shorter than %d characters", ErrToken, minToken)
	}
	return &Token{sum: sha256.Sum256([]byte(line))}, nil
}

// Authenticate compares the bearer token's hash in constant time (the
// hashes have one length whatever the token's).
func (t *Token) Authenticate(r *http.Request) (string, bool) {
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	got := sha256.Sum256([]byte(strings.TrimSpace(tok)))
	return "", subtle.ConstantTimeCompare(got[:], t.sum[:]) == 1
}

// Challenge asks for a bearer token.
func (t *Token) Challenge() string { return `Bearer realm="encryptfs"` }
