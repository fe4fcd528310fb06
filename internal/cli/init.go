package cli

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/encryptfs/encryptfs/internal/session"
	"github.com/spf13/cobra"
)

func newInitCommand(a *App) *cobra.Command {
	cmd := newCommand("init", "CIPHERDIR", 1, 1, groupVault, "create a new vault in an empty directory", dirArg)
	fs := cmd.Flags()
	var src passSource
	passSourceFlags(fs, &src, "password")
	cipherName := fs.String("cipher", "aes-gcm", "content cipher: aes-gcm or xchacha")
	chunk := fs.String("chunk-size", strconv.Itoa(session.DefaultChunkSize), "chunk `SIZE` in bytes (power of two, 4k..1M; suffix k or M allowed)")
	format := fs.Int("format", session.FormatVersion2, "config format: 2 (key slots: password, keyfiles, age identities, recovery key) or 1 (one password, as encryptfs 0.1 made); --reverse is always 1")
	noRecovery := fs.Bool("no-recovery-key", false, "format 2: make no recovery key slot (the password is then the only way in until key add)")
	fileRoots := fs.Bool("file-roots", true, "format 2: authenticate each file as one version (no chunk splicing, truncation or zeroed chunks); costs 16 bytes per chunk and 128 bytes of header (docs/format.md §16)")
	compactRoots := fs.Bool("compact-roots", true, "format 2, with --file-roots: store tag block 0 in two pieces after chunks 0 and 15, so that a small file pays no 4 KiB tag block; =false keeps the layout of vaults made before it (encryptfs upgrade converts such a vault) (docs/format.md §16)")
	trimmedLeaves := fs.Bool("trimmed-leaves", true, "format 2, with --file-roots: hash each tag block into the root only up to its last entry (16 bytes for a one-chunk file, not 4 KiB); =false makes the roots of vaults made before it (encryptfs upgrade adds it) (docs/format.md §16)")
	freshness := fs.Bool("freshness", true, "format 2: record what each device changes, so that deletion and rollback by the storage are reported (docs/format.md §15)")
	reverse := fs.Bool("reverse", false, "set up the existing plaintext directory CIPHERDIR for reverse mounts (aes-256-siv; see docs/reverse.md)")
	flagGroup(fs, groupReverse, "reverse")
	var kf kdfFlags
	kf.register(fs)
	cmd.RunE = func(cmd *cobra.Command, pos []string) error {
		switch {
		case *reverse && fs.Changed("format") && *format != session.FormatVersion1:
			return usageErrorf("init: --reverse makes a format-1 config (reverse mode has no key slots); drop --format %d", *format)
		case *format != session.FormatVersion1 && *format != session.FormatVersion2:
			return usageErrorf("init: --format %d: use 1 or 2", *format)
		case *noRecovery && (*reverse || *format == session.FormatVersion1):
			return usageErrorf("init: --no-recovery-key is for format 2, which has a recovery key slot")
		case (fs.Changed("file-roots") || fs.Changed("freshness")) && (*reverse || *format == session.FormatVersion1):
			return usageErrorf("init: --file-roots and --freshness are features of format 2")
		case fs.Changed("compact-roots") && *compactRoots && !*fileRoots:
			return usageErrorf("init: --compact-roots is a layout of file roots; drop --file-roots=false")
		case fs.Changed("compact-roots") && (*reverse || *format == session.FormatVersion1):
			return usageErrorf("init: --compact-roots is a feature of format 2")
		case fs.Changed("trimmed-leaves") && *trimmedLeaves && !*fileRoots:
			return usageErrorf("init: --trimmed-leaves is a rule of file roots; drop --file-roots=false")
		case fs.Changed("trimmed-leaves") && (*reverse || *format == session.FormatVersion1):
			return usageErrorf("init: --trimmed-leaves is a feature of format 2")
		}
		if *format == session.FormatVersion2 && !*reverse {
			return runInitV2(a, pos[0], *cipherName, *chunk, kf, src, initFeatures{recovery: !*noRecovery, fileRoots: *fileRoots, compactRoots: *compactRoots, trimmedLeaves: *trimmedLeaves, freshness: *freshness})
		}
		return runInit(a, pos[0], *cipherName, fs.Changed("cipher"), *chunk, *reverse, kf, src)
	}
	return cmd
}

// runInit makes a format-1 vault (or, with reverse, a PLAINDIR's
// reverse-mode config).
func runInit(a *App, dir, cipherName string, cipherSet bool, chunk string, reverse bool, kf kdfFlags, src passSource) error {
	if reverse {
		return cmdInitReverse(a, dir, cipherName, cipherSet, chunk, kf, src)
	}

	alg, ok := cipherNames[cipherName]
	if !ok {
		return usageErrorf("init: unknown cipher %q (use aes-gcm or xchacha)", cipherName)
	}
	p, err := vaultParams(a, alg, chunk, kf)
	if err != nil {
		return err
	}
	created, err := prepareEmptyDir("init", "CIPHERDIR", dir)
	if err != nil {
		return err
	}
	interrupt := a.removeOnInterrupt(dir, created)
	defer interrupt.stop()
	pw, err := a.readPassword(src, "New password", true)
	if err != nil {
		return interrupt.fail(err)
	}
	defer clear(pw)
	// The same creation code as vault.Create: a failed step leaves dir
	// empty again, so that init can be retried.
	interrupt.mu.Lock()
	s, masterKey, err := session.Create(dir, pw, session.CreateOptions{
		Params: p, Creator: creator, Options: session.Options{Rand: a.Rand},
	})
	interrupt.mu.Unlock()
	if err != nil {
		return interrupt.fail(fmt.Errorf("init: %w", err))
	}
	defer clear(masterKey)
	s.Close()
	fmt.Fprintf(a.Stdout, "Created vault %s (%s).\n", dir, describeParams(p))
	printMasterKey(a.Stdout, masterKey)
	fmt.Fprintf(a.Stdout, "Mount it with: encryptfs mount %s MOUNTPOINT\n", dir)
	return nil
}

// parseSize reads a byte count with an optional k/K or m/M suffix.
func parseSize(s string) (int, error) {
	mult := 1
	switch {
	case strings.HasSuffix(s, "k"), strings.HasSuffix(s, "K"):
		mult, s = 1024, s[:len(s)-1]
	case strings.HasSuffix(s, "m"), strings.HasSuffix(s, "M"):
		mult, s = 1024*1024, s[:len(s)-1]
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 || n > (1<<30)/mult {
		return 0, fmt.Errorf("%q is not a size", s)
	}
	return n * mult, nil
}

// describeParams is the one-line summary init prints of a new vault.
func describeParams(p session.Params) string {
	return fmt.Sprintf("%s, %d-byte chunks, Argon2id t=%d m=%d MiB p=%d",
		p.Cipher, p.ChunkSize, p.KDF.Time, p.KDF.MemoryKiB/1024, p.KDF.Threads)
}

// vaultParams builds and checks a new vault's parameters from init's flags.
func vaultParams(a *App, alg session.Algorithm, chunk string, kf kdfFlags) (session.Params, error) {
	chunkSize, err := parseSize(chunk)
	if err != nil {
		return session.Params{}, usageErrorf("init: --chunk-size: %v", err)
	}
	k, err := kf.params(a.Rand, a.defaultKDF())
	if err != nil {
		return session.Params{}, err
	}
	p := session.NewParams(string(alg), chunkSize, k)
	if err := p.Validate(); err != nil {
		return session.Params{}, withCode(ExitUsage, fmt.Errorf("init: %w", err))
	}
	return p, nil
}

// newConfig asks for the new password (twice on a terminal) and wraps a
// fresh master key under it. The caller clears the returned master key.
func newConfig(a *App, p session.Params, src passSource) (*session.Config, []byte, error) {
	pw, err := a.readPassword(src, "New password", true)
	if err != nil {
		return nil, nil, err
	}
	defer clear(pw)
	return session.CreateConfig(p, creator, pw, a.Rand)
}

// creator is the Creator init writes into a new config.
const creator = "encryptfs " + Version
