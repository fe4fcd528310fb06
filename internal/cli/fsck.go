package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/spf13/cobra"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/encryptfs/encryptfs/internal/fsck"
	"github.com/encryptfs/encryptfs/internal/session"
)

// ExitFsckProblems is fsck's exit code when the check ran and found
// problems (the same number gocryptfs uses). It belongs in exit.go's table
// and docs/cli.md, which are edited by the CLI's owner.
const ExitFsckProblems = 26

// cmdFsck checks a vault offline and optionally salvages or repairs it:
//
//	encryptfs fsck [--json] [--salvage DEST | --repair] [--passfile F | --extpass CMD | --masterkey] CIPHERDIR
//
// It exits 0 when the vault is clean (after --repair: when nothing is left
// to repair or report), ExitFsckProblems when problems were found (all
// listed on stdout), and the usual codes when it cannot run.
func newFsckCommand(a *App) *cobra.Command {
	cmd := newCommand("fsck", "CIPHERDIR", 1, 1, groupOffline, "check a vault's integrity offline (optionally salvage or repair)", dirArg)
	fs := cmd.Flags()
	var u unlockFlags
	u.register(fs, "password")
	salvage := fs.String("salvage", "", "copy everything readable into `DEST` (missing or empty) as plaintext")
	mustMark(cobra.MarkFlagDirname(fs, "salvage"))
	repair := fs.Bool("repair", false, "fix in place what an interrupted operation left (temporary files, orphaned sidecars, a lost directory ID of an empty directory, a torn header whose chunks authenticate), printing each change first; refused while the vault is mounted")
	flagGroup(fs, "Salvage and repair", "salvage", "repair")
	var stateDir string
	registerStateDir(fs, &stateDir)
	asJSON := fs.Bool("json", false, "print the report as JSON on stdout, and progress as JSON lines on stderr")
	flagGroup(fs, groupOutput, "json")
	cmd.RunE = func(_ *cobra.Command, pos []string) error {
		dir, err := filepath.Abs(pos[0])
		if err != nil {
			return withCode(ExitUsage, err)
		}
		if *repair && *salvage != "" {
			return usageErrorf("fsck: --repair and --salvage do not go together: salvage first, then repair")
		}
		if *repair {
			// The mount keeps its own view (open files, cached names): a
			// repair under it could remove a temporary entry it is using.
			if mnt := mountedAt(dir); mnt != "" {
				return errorfCode(ExitCipherDir, "fsck: %s is mounted on %s; unmount it before --repair", dir, mnt)
			}
		}
		c, err := a.loadConfig(dir)
		if err != nil {
			return err
		}
		// fsck checks freshness (its findings are problems); --repair
		// writes, so it records (freshopts.go).
		// A mounted vault is not checked: its mount records in batches,
		// so what it has not written yet would show as behind.
		use := session.FreshnessCheck
		switch {
		case *repair:
			use = session.FreshnessRecord
		case mountedAt(dir) != "":
			use = session.FreshnessOff
		}
		// fsck reports freshness's findings itself (as problems and
		// notes): the start-up line a recording session logs would say
		// the same again; --repair's last batch error comes from Close.
		var freshLog *log.Logger
		if !*repair {
			freshLog = log.New(a.Stderr, "encryptfs: ", 0)
		}
		s, err := a.unlockVaultWith(dir, c, u, "Password", a.freshOptions(dir, c, use, stateDir, freshLog))
		if err != nil {
			return err
		}
		defer s.Close()
		if unlockedByMasterKey(s, u) {
			// A key that decrypts no name in the root is refused; other errors
			// (a damaged root) are for fsck itself to report.
			if _, err := checkMasterKey(s); err != nil && ExitCode(err) == ExitWrongPassword {
				return err
			}
		}

		// Ctrl-C stops the walk; what was found so far is still reported.
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		opts := fsck.Options{Salvage: *salvage}
		if *repair {
			err := fsckRepair(a, ctx, s, dir, *asJSON)
			if cerr := s.Close(); err == nil && cerr != nil {
				err = fmt.Errorf("fsck: the repairs are made, but recording them for freshness failed: %w", cerr)
			}
			return err
		}
		prog := a.newProgress("fsck", *asJSON)
		if prog != nil {
			opts.Progress = prog.fsck
		}
		rep, checkErr := fsck.Check(ctx, s, opts)
		prog.finish()
		if rep == nil {
			if errors.Is(checkErr, fsck.ErrSalvageDir) {
				return withCode(ExitUsage, checkErr)
			}
			return withCode(ExitCipherDir, checkErr)
		}
		if err := writeFsckReport(a, rep, *asJSON); err != nil {
			return err
		}
		switch {
		case checkErr != nil:
			return withCode(ExitError, checkErr)
		case !rep.Clean:
			return errorfCode(ExitFsckProblems, "fsck: %s found in %s (listed above)", plural(len(rep.Problems), "problem"), dir)
		case rep.Behind:
			return fsckBehind(dir)
		}
		return nil
	}
	return cmd
}

// writeFsckReport prints a report as text or JSON.
func writeFsckReport(a *App, rep *fsck.Report, asJSON bool) error {
	if !asJSON {
		return fsck.WriteText(a.Stdout, rep)
	}
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(a.Stdout, "%s\n", b)
	return err
}

// fsckRepair runs fsck --repair: each change is printed ("repair: ..."
// on stdout; on stderr with --json) before it is made, then the report of
// the check after the changes.
func fsckRepair(a *App, ctx context.Context, s *session.Session, dir string, asJSON bool) error {
	w := a.Stdout
	if asJSON {
		w = a.Stderr
	}
	rr, err := fsck.Repair(ctx, s, func(f fsck.Fix) error {
		_, err := fmt.Fprintln(w, f.Line())
		return err
	})
	switch {
	case rr == nil:
		return withCode(ExitCipherDir, err)
	case rr.After == nil:
		return withCode(ExitError, err)
	}
	for _, f := range rr.Failed {
		fmt.Fprintf(a.Stderr, "encryptfs: fsck: repair failed: %s\n", f)
	}
	if err := writeFsckReport(a, rr.After, asJSON); err != nil {
		return err
	}
	switch {
	case err != nil:
		return withCode(ExitError, err)
	case len(rr.Failed) > 0:
		return errorfCode(ExitError, "fsck: %s failed in %s", plural(len(rr.Failed), "repair"), dir)
	case !rr.After.Clean:
		return errorfCode(ExitFsckProblems, "fsck: %s left in %s after %s", plural(len(rr.After.Problems), "problem"), dir, plural(len(rr.Fixes), "repair"))
	case rr.After.Behind:
		return fsckBehind(dir)
	}
	return nil
}

// fsck takes the check's progress callbacks (totals from its prescan).
func (p *progress) fsck(pr fsck.Progress) {
	if p.totalFiles != pr.TotalFiles || p.totalBytes != pr.TotalBytes {
		p.setTotals(pr.TotalFiles, pr.TotalBytes)
	}
	p.set(pr.Files, pr.Bytes)
}

// fsckBehind is fsck's line for a vault that is clean but behind (27, as
// freshness status): nothing is damaged, but something recorded has not
// arrived yet, or something there was not recorded by any device yet.
func fsckBehind(dir string) error {
	return errorfCode(ExitFreshBehind, "fsck: %s is clean but behind (the freshness notes above: a sync in flight could explain them); encryptfs freshness status %s tells when they count as rolled back", dir, dir)
}
