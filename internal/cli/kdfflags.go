package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/encryptfs/encryptfs/internal/session"
	"github.com/spf13/pflag"
)

// kdfFlags are the Argon2id cost flags shared by init and passwd.
type kdfFlags struct {
	time, memoryMiB, threads uint
}

func (k *kdfFlags) register(fs *pflag.FlagSet) {
	fs.UintVar(&k.time, "kdf-time", 0, "Argon2id passes (default: the built-in cost of about 1 s)")
	fs.UintVar(&k.memoryMiB, "kdf-memory", 0, fmt.Sprintf("Argon2id memory in `MiB` (minimum %d; default: built in)", session.MinKDFMemoryKiB/1024))
	fs.UintVar(&k.threads, "kdf-threads", 0, "Argon2id lanes (default: built in)")
	flagGroup(fs, groupKDF, "kdf-time", "kdf-memory", "kdf-threads")
}

// params returns fresh KDF params (new salt) with the flags' costs, each
// unset one taken from base.
func (k kdfFlags) params(rand io.Reader, base kdfCosts) (session.KDFParams, error) {
	t, m, p := uint(base.time), uint(base.memoryKiB)/1024, uint(base.threads)
	if k.time != 0 {
		t = k.time
	}
	if k.memoryMiB != 0 {
		m = k.memoryMiB
	}
	if k.threads != 0 {
		p = k.threads
	}
	if t > session.MaxKDFTime || m > session.MaxKDFMemoryKiB/1024 || p > session.MaxKDFThreads {
		return session.KDFParams{}, usageErrorf("KDF cost out of bounds: time %d (max %d), memory %d MiB (max %d), threads %d (max %d)",
			t, session.MaxKDFTime, m, session.MaxKDFMemoryKiB/1024, p, session.MaxKDFThreads)
	}
	params, err := session.NewKDFParams(rand, uint32(t), uint32(m*1024), uint8(p))
	if errors.Is(err, session.ErrKDFParams) {
		return session.KDFParams{}, withCode(ExitUsage, err)
	}
	return params, err
}

// cipherNames maps the short flag values to the stored algorithm names.
var cipherNames = map[string]session.Algorithm{
	"aes-gcm": session.AES256GCM, string(session.AES256GCM): session.AES256GCM,
	"xchacha": session.XChaCha20Poly1305, string(session.XChaCha20Poly1305): session.XChaCha20Poly1305,
}
