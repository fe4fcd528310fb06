package cli

import (
	"github.com/spf13/cobra"
)

// completionShells are the shells cobra writes completion scripts for.
var completionShells = []string{"bash", "zsh", "fish", "powershell"}

// newCompletionCommand is "encryptfs completion SHELL". The scripts come
// from cobra and call the hidden "encryptfs __complete" at completion
// time, so they follow the command tree without being regenerated.
func newCompletionCommand(a *App) *cobra.Command {
	cmd := newCommand("completion", "bash|zsh|fish|powershell", 1, 1, groupOther, "print a shell completion script (bash, zsh, fish or PowerShell)")
	cmd.ValidArgs = completionShells
	cmd.ValidArgsFunction = cobra.FixedCompletions(completionShells, cobra.ShellCompDirectiveNoFileComp)
	cmd.RunE = func(cmd *cobra.Command, pos []string) error {
		root, w := cmd.Root(), a.Stdout
		switch pos[0] {
		case "bash":
			return root.GenBashCompletionV2(w, true)
		case "zsh":
			return root.GenZshCompletion(w)
		case "fish":
			return root.GenFishCompletion(w, true)
		case "powershell":
			return root.GenPowerShellCompletionWithDesc(w)
		}
		return usageErrorf("completion: unknown shell %q (use bash, zsh, fish or powershell)", pos[0])
	}
	return cmd
}
