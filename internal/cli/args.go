package cli

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// resolveArgs turns a command line into what cobra parses: the command
// path, then its arguments with the spellings Go's flag package accepted
// rewritten (see normalizeArgs). It also handles what cobra cannot: the
// mount.fuse3 form "encryptfs CIPHERDIR MOUNTPOINT -o OPTIONS", -V and an
// unknown command (exit 2).
func (a *App) resolveArgs(root *cobra.Command, args []string) ([]string, error) {
	switch args[0] {
	case "-V", "-version":
		return []string{"--version"}, nil
	case "-help":
		return []string{"--help"}, nil
	case cobra.ShellCompRequestCmd, cobra.ShellCompNoDescRequestCmd:
		return args, nil // the shell completion scripts' own entry point
	}
	cmd, path := root, []string{}
	for len(path) < len(args) && cmd.HasSubCommands() {
		child := subcommand(cmd, args[len(path)])
		if child == nil {
			break
		}
		cmd, path = child, append(path, args[len(path)])
	}
	if cmd == root {
		if strings.HasPrefix(args[0], "-") {
			return args, nil // --help, --version or a flag error from cobra
		}
		// mount.fuse3 (fstab type fuse.encryptfs) runs "encryptfs CIPHERDIR
		// MOUNTPOINT -o OPTIONS": two leading paths are a mount.
		if len(args) >= 2 && !strings.HasPrefix(args[1], "-") {
			if fi, err := os.Stat(args[0]); err == nil && fi.IsDir() {
				cmd, path, args = subcommand(root, "mount"), []string{"mount"}, append([]string{"mount"}, args...)
			}
		}
		if cmd == root {
			return nil, usageErrorf("unknown command %q (see encryptfs --help)", args[0])
		}
	}
	cmd.InheritedFlags() // merges the parents' persistent flags into cmd.Flags()
	rest := normalizeArgs(cmd.Flags(), args[len(path):], func(old, new string) {
		fmt.Fprintf(a.Stderr, "encryptfs: %s is deprecated, use %s\n", old, new)
	})
	a.cmdArgs = rest
	return append(path, rest...), nil
}

// subcommand returns cmd's child called name (or aliased so), or nil.
func subcommand(cmd *cobra.Command, name string) *cobra.Command {
	for _, c := range cmd.Commands() {
		if c.Name() == name || c.HasAlias(name) {
			return c
		}
	}
	return nil
}

// normalizeArgs rewrites the spellings Go's flag package accepted and pflag
// does not, so that command lines, scripts and fstab lines written for the
// hand-written parser keep working:
//
//   - "-passfile F" (one dash, long name): "--passfile F", with a
//     deprecation note through warn (gocryptfs users type it so);
//   - "--f", "--o=ro" (two dashes, one letter): "-f", "-o=ro";
//   - an operand that starts with '-' but cannot be a flag (a backing name:
//     base64url starts with '-' one time in 64) stays an operand: the
//     operands then go after a "--".
func normalizeArgs(flags *pflag.FlagSet, args []string, warn func(old, new string)) []string {
	var seq, flagArgs, operands []string
	dashOperand := false
	// takeValue moves the next argument along with a flag that needs one.
	takeValue := func(i int, f *pflag.Flag, inline bool) int {
		if f != nil && !inline && f.NoOptDefVal == "" && i+1 < len(args) {
			i++
			seq, flagArgs = append(seq, args[i]), append(flagArgs, args[i])
		}
		return i
	}
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if arg == "--" {
			seq = append(seq, args[i:]...)
			operands = append(operands, args[i+1:]...)
			break
		}
		if len(arg) < 2 || arg[0] != '-' {
			seq, operands = append(seq, arg), append(operands, arg)
			continue
		}
		double := strings.HasPrefix(arg, "--")
		name, _, inline := strings.Cut(strings.TrimLeft(arg, "-"), "=")
		var f *pflag.Flag
		switch {
		case double && len(name) == 1 && flags.ShorthandLookup(name) != nil:
			arg, f = arg[1:], flags.ShorthandLookup(name)
		case double:
			f = flags.Lookup(name)
		case len(name) > 1 && flags.Lookup(name) != nil:
			warn("-"+name, "--"+name)
			arg, f = "-"+arg, flags.Lookup(name)
		case cannotBeFlag(flags, arg):
			seq, operands = append(seq, arg), append(operands, arg)
			dashOperand = true
			continue
		case len(name) == 1:
			f = flags.ShorthandLookup(name)
		}
		seq, flagArgs = append(seq, arg), append(flagArgs, arg)
		i = takeValue(i, f, inline)
	}
	if !dashOperand {
		return seq
	}
	return append(append(flagArgs, "--"), operands...)
}

// cannotBeFlag reports whether arg starts with '-' but is an operand: a
// backing name or a path such as "-VYV.../2m2i...". Flag names are
// lower-case letters, digits and '-', and short flags single letters, so a
// dash-word with any other character before '=' that is not a defined flag
// or a run of short flags is taken as an operand; a mistyped flag
// ("--passfle") is still an error.
func cannotBeFlag(flags *pflag.FlagSet, arg string) bool {
	name := strings.TrimLeft(arg, "-")
	name, _, _ = strings.Cut(name, "=")
	if name == "" || flags.Lookup(name) != nil || allShorthands(flags, name) {
		return false
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return true
		}
	}
	return false
}

// allShorthands reports whether every letter of s is a short flag ("lR").
func allShorthands(flags *pflag.FlagSet, s string) bool {
	for _, c := range s {
		if flags.ShorthandLookup(string(c)) == nil {
			return false
		}
	}
	return true
}
