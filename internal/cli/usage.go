package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Flag groups: the sections of a command's --help. A flag joins one with
// flagGroup; flags in no group are listed last under "Flags".
const (
	groupUnlock   = "Unlock"
	groupMountOpt = "Mount"
	groupReverse  = "Reverse mode"
	groupKDF      = "Key derivation"
	groupOutput   = "Output"
	groupAdvanced = "Advanced"
)

// groupAnnotation is the pflag annotation that holds a flag's group.
const groupAnnotation = "encryptfs_group"

// flagGroup puts the named flags of fs into group.
func flagGroup(fs *pflag.FlagSet, group string, names ...string) {
	for _, name := range names {
		if err := fs.SetAnnotation(name, groupAnnotation, []string{group}); err != nil {
			panic(err) // a misspelt name in a command's constructor
		}
	}
}

// flagSections splits the visible flags of cmd into groups, in the order
// their first flag was defined, with the ungrouped ones ("Flags") last.
func flagSections(cmd *cobra.Command) (titles []string, sets map[string]*pflag.FlagSet) {
	sets = map[string]*pflag.FlagSet{}
	add := func(title string, f *pflag.Flag) {
		if sets[title] == nil {
			sets[title] = pflag.NewFlagSet(title, pflag.ContinueOnError)
			sets[title].SortFlags = false
			if title != "Flags" {
				titles = append(titles, title)
			}
		}
		sets[title].AddFlag(f)
	}
	cmd.LocalFlags().VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		if g := f.Annotations[groupAnnotation]; len(g) == 1 {
			add(g[0], f)
		} else {
			add("Flags", f)
		}
	})
	cmd.InheritedFlags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			add("Global flags", f)
		}
	})
	if sets["Flags"] != nil {
		titles = append(titles, "Flags")
	}
	return titles, sets
}

// writeHelp is --help: the description, then the usage.
func writeHelp(w io.Writer, cmd *cobra.Command) {
	desc := cmd.Long
	if desc == "" {
		desc = cmd.Short
	}
	fmt.Fprintf(w, "%s\n\n", strings.TrimSpace(desc))
	writeUsage(w, cmd)
	if cmd.Example != "" {
		fmt.Fprintf(w, "\nExamples:\n%s\n", indent(cmd.Example, "  "))
	}
	writeExitCodes(w)
}

// indent puts prefix before every line of s.
func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = prefix + l
		}
	}
	return strings.Join(lines, "\n")
}

// writeUsage prints the usage line, the commands by group and the flags
// by section.
func writeUsage(w io.Writer, cmd *cobra.Command) {
	fmt.Fprintf(w, "Usage:\n")
	if cmd.Runnable() {
		fmt.Fprintf(w, "  %s\n", cmd.UseLine())
	}
	if cmd.HasAvailableSubCommands() {
		fmt.Fprintf(w, "  %s COMMAND [flags] ARGS\n", cmd.CommandPath())
		for _, g := range cmd.Groups() {
			writeCommands(w, cmd, g.Title, g.ID)
		}
		writeCommands(w, cmd, "Commands:", "")
	}
	titles, sets := flagSections(cmd)
	for _, title := range titles {
		fmt.Fprintf(w, "\n%s:\n%s", title, flagUsages(sets[title]))
	}
	if cmd.HasAvailableSubCommands() {
		fmt.Fprintf(w, "\nRun \"%s COMMAND --help\" for a command's flags and examples; man encryptfs for the manual.\n", cmd.CommandPath())
	}
}

// writeCommands lists the available subcommands of cmd in group id.
func writeCommands(w io.Writer, cmd *cobra.Command, title, id string) {
	var lines []string
	for _, c := range cmd.Commands() {
		if c.GroupID == id && (c.IsAvailableCommand() || c.Name() == "help") {
			lines = append(lines, fmt.Sprintf("  %-13s %s", c.Name(), c.Short))
		}
	}
	if len(lines) > 0 {
		fmt.Fprintf(w, "\n%s\n%s\n", title, strings.Join(lines, "\n"))
	}
}
