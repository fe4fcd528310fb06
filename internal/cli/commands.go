package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// Adding a command: write NAME.go with a constructor, a plain function of
// the shared context (*App: streams, randomness, password prompting,
// config loading and unlocking), as restic's and age's commands are
//
//	func newNameCommand(a *App) *cobra.Command {
//		cmd := newCommand("name", "ARGS", minArgs, maxArgs, groupX, "what it does",
//			dirArg, fileArg) // how each argument completes
//		f := cmd.Flags()
//		f.StringVar(...)
//		flagGroup(f, groupUnlock, "keyfile") // its section in --help
//		cmd.RunE = func(cmd *cobra.Command, pos []string) error { ... }
//		return cmd
//	}
//
// with its work in plain functions (runName(a, ...)) or a small type of
// its own, not in methods of App, and add it to commandConstructors
// below. A command with subcommands (encryptfs key add|list|remove) is a
// newCommand whose constructor AddCommand()s its children; it gets no
// RunE. Help, completion, the
// manual pages and the single-dash rewriting all read the cobra tree, so
// nothing else needs an edit (run scripts/gen-docs.sh for the man pages).

// Command groups, in the order --help lists them.
const (
	groupVault   = "vault"
	groupMount   = "mount"
	groupOffline = "offline"
	groupOther   = "other"
)

func commandGroups() []*cobra.Group {
	return []*cobra.Group{
		{ID: groupVault, Title: "Vault commands:"},
		{ID: groupMount, Title: "Mount commands:"},
		{ID: groupOffline, Title: "Offline tools (no FUSE):"},
		{ID: groupOther, Title: "Other commands:"},
	}
}

// commandConstructors lists every subcommand (--help sorts them by name
// within their group).
func commandConstructors() []func(*App) *cobra.Command {
	return []func(*App) *cobra.Command{
		newInitCommand,
		newPasswdCommand,
		newInfoCommand,
		newKeyCommand,
		newUpgradeCommand,
		newMountCommand,
		newUnmountCommand,
		newServeCommand,
		newFsckCommand,
		newFreshnessCommand,
		newLsCommand,
		newCatCommand,
		newExportCommand,
		newImportCommand,
		newEncryptPathCommand,
		newDecryptPathCommand,
		newVersionCommand,
		newCompletionCommand,
		newManCommand,
	}
}

// rootLong is the description in encryptfs --help and encryptfs(1). The
// manual page renders it as markdown: keep it plain text that reads the same
// both ways (an indented line is a literal block).
const rootLong = `encryptfs keeps files in an ordinary directory, the CIPHERDIR, where every
file name, file content, symlink target and extended attribute is encrypted
and authenticated, and shows their plaintext through a FUSE mount.

Flags may come before, between or after the arguments; "--" ends the flags.
Every error is one line on standard error. The single-dash spellings of
long flags (-passfile) still work but are deprecated: use --passfile.

mount(8) and fstab: the file system type fuse.encryptfs makes mount.fuse3
run "encryptfs CIPHERDIR MOUNTPOINT -o OPTIONS", which encryptfs treats as a
mount. Example /etc/fstab line:

    /srv/vault /mnt/vault fuse.encryptfs passfile=/root/vault.pw,nofail 0 0`

// newRootCommand builds the command tree. Errors and usage are printed by
// Run, not by cobra, so that every error is one line with its exit code.
func (a *App) newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:               "encryptfs",
		Short:             "encrypted overlay file system (FUSE)",
		Long:              rootLong,
		Version:           Version,
		SilenceErrors:     true,
		SilenceUsage:      true,
		DisableAutoGenTag: true,
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
	}
	root.SetOut(a.Stdout)
	root.SetErr(a.Stderr)
	root.SetVersionTemplate(versionLine())
	root.SetUsageFunc(func(c *cobra.Command) error {
		writeUsage(c.OutOrStderr(), c)
		return nil
	})
	root.SetHelpFunc(func(c *cobra.Command, _ []string) {
		writeHelp(c.OutOrStdout(), c)
	})
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		if c == root {
			return usageErrorf("%v", err)
		}
		return usageErrorf("%s: %v", c.Name(), err)
	})
	root.AddGroup(commandGroups()...)
	root.SetHelpCommandGroupID(groupOther)
	root.InitDefaultHelpFlag()
	root.InitDefaultVersionFlag()
	for _, newCmd := range commandConstructors() {
		root.AddCommand(newCmd(a))
	}
	root.InitDefaultHelpCmd() // after the commands: it needs subcommands
	setExamples(root)
	return root
}

// newCommand is a subcommand with its argument count check, its help
// group and how each argument completes (the last kind repeats).
func newCommand(name, argsUsage string, minArgs, maxArgs int, group, short string, args ...argKind) *cobra.Command {
	use := name
	if argsUsage != "" {
		use += " [flags] " + argsUsage
	}
	cmd := &cobra.Command{
		Use:               use,
		Short:             short,
		GroupID:           group,
		Args:              posArgs(name, argsUsage, minArgs, maxArgs),
		ValidArgsFunction: completeArgs(args),
		DisableAutoGenTag: true,
	}
	cmd.Flags().SortFlags = false
	cmd.InitDefaultHelpFlag()
	return cmd
}

// posArgs checks the number of positional arguments with the message and
// exit code (2) the hand-written parser had.
func posArgs(name, argsUsage string, minArgs, maxArgs int) cobra.PositionalArgs {
	return func(c *cobra.Command, pos []string) error {
		if len(pos) >= minArgs && len(pos) <= maxArgs {
			return nil
		}
		if c != nil && c.HasParent() {
			name = c.CommandPath() // "encryptfs key remove"
			name = name[strings.IndexByte(name, ' ')+1:]
		}
		want := plural(minArgs, "argument")
		switch {
		case maxArgs == 1<<20:
			want = fmt.Sprintf("at least %s", want)
		case maxArgs != minArgs:
			want = fmt.Sprintf("%d to %d arguments", minArgs, maxArgs)
		}
		return usageErrorf("%s: expected %s (%s), got %d; see encryptfs %s --help", name, want, strings.TrimSpace(argsUsage), len(pos), name)
	}
}

// argKind says how a positional argument completes in a shell.
type argKind int

const (
	dirArg   argKind = iota // a directory (CIPHERDIR, MOUNTPOINT, DESTDIR)
	fileArg                 // any local file (import's SRC)
	vaultArg                // a path inside a vault: not completed
)

// completeArgs completes positional arguments by kind.
func completeArgs(kinds []argKind) cobra.CompletionFunc {
	return func(_ *cobra.Command, pos []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(kinds) == 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		k := kinds[min(len(pos), len(kinds)-1)]
		switch k {
		case dirArg:
			return nil, cobra.ShellCompDirectiveFilterDirs
		case fileArg:
			return nil, cobra.ShellCompDirectiveDefault
		}
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
}
