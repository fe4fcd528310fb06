package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/cpuguy83/go-md2man/v2/md2man"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// The manual pages: encryptfs(1) and one encryptfs-COMMAND(1) per command,
// from the same tree that parses the command line, laid out as
// spf13/cobra/doc lays them out and rendered by go-md2man (as cobra/doc
// does), with the sections cobra/doc lacks. scripts/gen-docs.sh writes them to docs/man/ and
// TestManPagesCurrent fails when the committed copies differ.

// manDate is the pages' date. It is fixed so that generating the pages
// twice gives the same bytes (cobra would put today's): move it with
// Version.
var manDate = time.Date(2026, time.January, 1, 0, 0, 0, 0, time.UTC)

// manEnvironment and manFiles are the ENVIRONMENT and FILES sections of
// every page: what the program reads besides its arguments.
const manEnvironment = `**ENCRYPTFS_TRANSPORT**
: the default of mount --transport: auto, uring or classic

**GOMAXPROCS**
: the Go runtime's processors for a mount's daemon; unset, a daemon on the classic transport takes one per CPU and one per worker thread (docs/performance.md, "A P per waiting thread")

**CREDENTIALS_DIRECTORY**
: where --credential NAME is read from (set by systemd for LoadCredential= and LoadCredentialEncrypted=)

**XDG_STATE_HOME**
: this machine's freshness state lives in $XDG_STATE_HOME/encryptfs when it is set (an absolute path)

**HOME**
: else the state lives in $HOME/.local/state/encryptfs (without either: /var/lib/encryptfs)

`

const manFiles = `*CIPHERDIR*/encryptfs.conf
: the vault's config: parameters and key slots (mode 0400)

$XDG_STATE_HOME/encryptfs/*VAULTID*/, else ~/.local/state/encryptfs/*VAULTID*/, else /var/lib/encryptfs/*VAULTID*/
: this machine's freshness state of the vault with that ID (state.json, lock); mount --state-dir DIR names another; encryptfs freshness forget and prune remove old ones

$XDG_STATE_HOME/encryptfs/seen/ (beside the state directories)
: the configs this machine opened vaults with, one JSON file per vault, so that an older encryptfs.conf put back is noticed (exit 28)

`

// manMarkdown is one page in the markdown go-md2man renders: cobra's
// sections (NAME, SYNOPSIS, DESCRIPTION, OPTIONS, SEE ALSO) with flags
// named as --help names them (flagSpec), and EXIT STATUS, ENVIRONMENT,
// FILES and EXAMPLES on every page.
func manMarkdown(c *cobra.Command) []byte {
	var b bytes.Buffer
	dashed := strings.ReplaceAll(c.CommandPath(), " ", "-")
	desc := c.Long
	if desc == "" {
		desc = c.Short
	}
	fmt.Fprintf(&b, "%% \"%s\" \"1\" \"%s\" \"encryptfs %s\" \"User Commands\"\n", strings.ToUpper(dashed), manDate.Format("Jan 2006"), Version)
	fmt.Fprintf(&b, "# NAME\n%s \\- %s\n\n", dashed, c.Short)
	fmt.Fprintf(&b, "# SYNOPSIS\n**%s**\n\n", c.UseLine())
	fmt.Fprintf(&b, "# DESCRIPTION\n%s\n\n", desc)
	manFlags(&b, "OPTIONS", c.NonInheritedFlags())
	manFlags(&b, "OPTIONS INHERITED FROM PARENT COMMANDS", c.InheritedFlags())
	fmt.Fprintf(&b, "# EXIT STATUS\n%s", exitCodesMarkdown())
	fmt.Fprintf(&b, "# ENVIRONMENT\n%s", manEnvironment)
	fmt.Fprintf(&b, "# FILES\n%s", manFiles)
	if c.Example != "" {
		fmt.Fprintf(&b, "# EXAMPLES\n```\n%s\n```\n", c.Example)
	}
	var see []string
	if c.HasParent() {
		see = append(see, fmt.Sprintf("**%s(1)**", strings.ReplaceAll(c.Parent().CommandPath(), " ", "-")))
	}
	children := c.Commands()
	sort.Slice(children, func(i, j int) bool { return children[i].Name() < children[j].Name() })
	for _, child := range children {
		if child.IsAvailableCommand() && !child.IsAdditionalHelpTopicCommand() {
			see = append(see, fmt.Sprintf("**%s-%s(1)**", dashed, child.Name()))
		}
	}
	if len(see) > 0 {
		fmt.Fprintf(&b, "# SEE ALSO\n%s\n", strings.Join(see, ", "))
	}
	return b.Bytes()
}

// manFlags writes a section of flags, each as --help names it.
func manFlags(b *bytes.Buffer, title string, fs *pflag.FlagSet) {
	if !fs.HasAvailableFlags() {
		return
	}
	fmt.Fprintf(b, "# %s\n", title)
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden || f.Deprecated != "" {
			return
		}
		spec, usage := flagSpec(f)
		fmt.Fprintf(b, "**%s**\n: %s%s\n\n", spec, usage, flagDefault(f))
	})
	b.WriteString("\n")
}

// manPages renders every page: file name -> roff.
func manPages(root *cobra.Command) (map[string][]byte, error) {
	pages := map[string][]byte{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c != root && (!c.IsAvailableCommand() || c.IsAdditionalHelpTopicCommand()) {
			return
		}
		pages[strings.ReplaceAll(c.CommandPath(), " ", "-")+".1"] = md2man.Render(manMarkdown(c))
		for _, child := range c.Commands() {
			walk(child)
		}
	}
	walk(root)
	return pages, nil
}

// newManCommand is "encryptfs man [--dir DIR]".
func newManCommand(a *App) *cobra.Command {
	cmd := newCommand("man", "", 0, 0, groupOther, "print the encryptfs(1) manual page, or write all pages with --dir")
	dir := cmd.Flags().String("dir", "", "write encryptfs.1 and every encryptfs-COMMAND.1 into `DIR`, removing stale encryptfs*.1 there")
	mustMark(cmd.MarkFlagDirname("dir"))
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		pages, err := manPages(cmd.Root())
		if err != nil {
			return err
		}
		if *dir == "" {
			_, err := a.Stdout.Write(pages["encryptfs.1"])
			return err
		}
		return writeManDir(*dir, pages)
	}
	return cmd
}

// writeManDir replaces the encryptfs*.1 pages in dir with pages,
// creating dir if it is missing.
func writeManDir(dir string, pages map[string][]byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("man: %w", err)
	}
	old, err := filepath.Glob(filepath.Join(dir, "encryptfs*.1"))
	if err != nil {
		return err
	}
	for _, p := range old {
		if _, keep := pages[filepath.Base(p)]; !keep {
			if err := os.Remove(p); err != nil {
				return err
			}
		}
	}
	for name, b := range pages {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return fmt.Errorf("man: %w", err)
		}
	}
	return nil
}
