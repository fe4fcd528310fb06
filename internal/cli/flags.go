package cli

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// passSourceFlags adds --passfile and --extpass (in the Unlock group),
// the ways every command that asks for a password takes one.
func passSourceFlags(fs *pflag.FlagSet, src *passSource, what string) {
	fs.StringVar(&src.passfile, "passfile", "", "read the "+what+" from the first line of `FILE`")
	fs.StringVar(&src.extpass, "extpass", "", "run `CMD` (split on spaces, no shell) and use its first output line as the "+what)
	mustMark(cobra.MarkFlagFilename(fs, "passfile"))
	flagGroup(fs, groupUnlock, "passfile", "extpass")
}

// masterKeyFlag adds --recovery-key (in the Unlock group), and its old
// name --masterkey (gocryptfs's, and ours before), hidden but kept so
// that scripts go on working.
func masterKeyFlag(fs *pflag.FlagSet, p *bool, usage string) {
	fs.BoolVar(p, "recovery-key", false, usage)
	fs.BoolVar(p, "masterkey", false, "old name of --recovery-key")
	mustMark(fs.MarkHidden("masterkey"))
	flagGroup(fs, groupUnlock, "recovery-key")
}

// mustMark panics when a constructor marks a flag that does not exist.
func mustMark(err error) {
	if err != nil {
		panic(err)
	}
}
