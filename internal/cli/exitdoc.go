package cli

import (
	"fmt"
	"io"
	"strings"
)

// exitCodeDocs is the one list of exit codes that --help and every manual
// page print (docs/cli.md has the long form). A binary installed without
// the docs still says what its codes mean.
var exitCodeDocs = []struct {
	code int
	text string
}{
	{ExitOK, "success"},
	{ExitError, "any other error (I/O error, unexpected failure)"},
	{ExitUsage, "usage: unknown command or flag, wrong number of arguments, bad flag or -o value"},
	{ExitWrongPassword, "wrong password, key or identity (no key slot opens)"},
	{ExitCipherDir, "CIPHERDIR problem: missing, not a directory, not empty (init), no encryptfs.conf"},
	{ExitCorruptConfig, "encryptfs.conf is corrupt or was edited"},
	{ExitUnsupported, "unsupported vault: newer format, unknown feature flag, reverse vault, KDF memory beyond this machine, interrupted upgrade"},
	{ExitPassword, "no password or credential could be read: empty, the entries differ, passfile/extpass/keyfile failed"},
	{ExitMountPoint, "MOUNTPOINT problem: missing, not a directory, not empty, inside CIPHERDIR, already mounted (also: the vault is already mounted on this machine)"},
	{ExitMount, "the FUSE mount failed (serve: the listener failed)"},
	{ExitUnmount, "unmount failed: not mounted, not a FUSE mount, busy"},
	{ExitCorruptData, "data failed authentication or is malformed (offline tools)"},
	{ExitNoSpace, "no space left (ENOSPC, EDQUOT)"},
	{ExitKeySlot, "a key slot change refused: the last slot, no such slot, too many slots"},
	{ExitFsckProblems, "fsck found problems (listed on stdout)"},
	{ExitFreshBehind, "freshness status or fsck found the vault behind (a sync in flight could explain it)"},
	{ExitFreshRolledBack, "the vault was rolled back (freshness status, mount --freshness strict), or encryptfs.conf is older than one this machine saw"},
	{ExitUnrecorded, "unmount: unmounted, but the last freshness records could not be written (the next mount writes them)"},
	{ExitInterrupted, "interrupted (SIGINT, SIGTERM): init and export removed the directory they had created"},
}

// writeExitCodes prints the exit status paragraph of --help.
func writeExitCodes(w io.Writer) {
	fmt.Fprintf(w, "\nExit status:\n")
	for _, e := range exitCodeDocs {
		fmt.Fprintf(w, "  %3d  %s\n", e.code, e.text)
	}
}

// exitCodesMarkdown is the EXIT STATUS section of a manual page.
func exitCodesMarkdown() string {
	var b strings.Builder
	for _, e := range exitCodeDocs {
		fmt.Fprintf(&b, "**%d**\n: %s\n\n", e.code, e.text)
	}
	return b.String()
}
