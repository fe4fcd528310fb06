package cli

import (
	"bufio"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/encryptfs/encryptfs/internal/session"
	"github.com/encryptfs/encryptfs/vault"
	"github.com/spf13/pflag"
)

// vaultFlags choose how the offline commands unlock a vault.
type vaultFlags struct {
	unlock unlockFlags
}

func (vf *vaultFlags) register(fs *pflag.FlagSet) {
	vf.unlock.register(fs, "password")
}

// openVault unlocks CIPHERDIR for the offline commands that only read
// (no freshness: freshopts.go).
func (a *App) openVault(dir string, vf vaultFlags) (*vault.Vault, error) {
	return a.openVaultFresh(dir, vf, session.FreshnessOff, "")
}

// openVaultFresh is openVault with freshness used as use says (a command
// that writes records: session.FreshnessRecord), with the state
// directory stateDir ("": the default). The start-up report goes to
// stderr.
func (a *App) openVaultFresh(dir string, vf vaultFlags, use session.FreshnessUse, stateDir string) (*vault.Vault, error) {
	c, err := a.loadConfig(dir)
	if err != nil {
		return nil, err
	}
	o := a.freshOptions(dir, c, use, stateDir, log.New(a.Stderr, "encryptfs: ", 0))
	s, err := a.unlockVaultWith(dir, c, vf.unlock, "Password", o)
	if err != nil {
		return nil, err
	}
	return vault.FromSession(s)
}

// mountedAt returns where CIPHERDIR is mounted by encryptfs ("" if not),
// from the mount source, which is CIPHERDIR unless --fsname changed it.
func mountedAt(cipherDir string) string {
	abs, err := filepath.Abs(cipherDir)
	if err != nil {
		return ""
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		for i := 5; i+2 < len(fields); i++ {
			if fields[i] == "-" {
				if fields[i+1] == "fuse.encryptfs" && unescapeMountinfo(fields[i+2]) == abs {
					return unescapeMountinfo(fields[4])
				}
				break
			}
		}
	}
	return ""
}

// copyBuffer copies with a 1 MiB buffer, so that whole chunks are sealed
// and opened at once (the wrappers hide ReaderFrom/WriterTo, which would
// fall back to 32 KiB copies).
func copyBuffer(dst io.Writer, src io.Reader) (int64, error) {
	return io.CopyBuffer(struct{ io.Writer }{dst}, struct{ io.Reader }{src}, make([]byte, 1<<20))
}

// problems counts per-entry failures of export and import, which report
// each one and go on.
type problems struct {
	a       *App
	cmd     string
	failed  int
	corrupt int
	full    int // failed on a full disk (ENOSPC, EDQUOT)

	progress *progress // cleared before each report (nil: none)
}

func (p *problems) report(path string, err error) {
	p.failed++
	p.progress.interrupt()
	switch ExitCode(err) {
	case ExitCorruptData:
		p.corrupt++
	case ExitNoSpace:
		p.full++
	}
	fmt.Fprintf(p.a.Stderr, "encryptfs: %s: %s: %s\n", p.cmd, displayName(path), displayText(userMessage(err)))
}

// result is the command's error after all entries were tried.
func (p *problems) result() error {
	switch {
	case p.corrupt > 0:
		return withCode(ExitCorruptData, fmt.Errorf("%s: %s failed (%d failed authentication; each is listed above)", p.cmd, plural(p.failed, "entry"), p.corrupt))
	case p.full > 0:
		return withCode(ExitNoSpace, fmt.Errorf("%s: %s failed (%d on a full disk; each is listed above)", p.cmd, plural(p.failed, "entry"), p.full))
	case p.failed > 0:
		return fmt.Errorf("%s: %s failed (each is listed above)", p.cmd, plural(p.failed, "entry"))
	}
	return nil
}
