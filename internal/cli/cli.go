// Package cli is the encryptfs command line: one file per subcommand,
// registered in commands.go and parsed by spf13/cobra. It is the only
// package that prints to the user, and it maps every error to one of the
// exit codes documented in docs/cli.md.
package cli

import (
	"bufio"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
)

// Version is this build's version, written to new configs as their Creator.
const Version = "0.1.0"

// App is the context every command shares: the process's standard
// streams and randomness (so that tests can run the commands with other
// ones), reading passwords and credentials, loading configs and unlocking
// vaults. The commands themselves are plain functions that take it
// (newNameCommand(a), runName(a, ...)), one file or a few per command,
// so that App stays this small shared part.
type App struct {
	Stdin  *os.File
	Stdout io.Writer
	Stderr io.Writer
	Rand   io.Reader

	// stdinLines reads lines from Stdin when it is not a terminal; shared so
	// that passwd can read an old and a new password from two lines.
	stdinLines *bufio.Reader

	// cmdArgs are the running command's arguments (after the command name,
	// single-dash spellings rewritten): mount hands them to its daemon child.
	cmdArgs []string

	// kdfDefaults and memAvailableKiB, when set (by tests), replace the
	// built-in KDF defaults and the reading of the machine's available
	// memory (kdfcost.go).
	kdfDefaults     kdfCosts
	memAvailableKiB func() (uint64, bool)
}

// Main runs the command line with the process's streams and returns the
// exit code.
func Main(args []string) int {
	a := &App{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Rand: rand.Reader}
	return a.Run(args)
}

// Run executes args (without the program name) and returns the exit code.
func (a *App) Run(args []string) int {
	err := a.execute(args)
	if err == nil {
		return ExitOK
	}
	code := ExitCode(err)
	if !errors.Is(err, errQuiet) {
		fmt.Fprintf(a.Stderr, "encryptfs: %s\n", displayText(userMessage(err)))
	}
	return code
}

// execute resolves the command, rewrites legacy spellings (args.go) and
// lets cobra parse and run it.
func (a *App) execute(args []string) error {
	root := a.newRootCommand()
	if len(args) == 0 {
		writeUsage(a.Stderr, root)
		return usageErrorf("no command given")
	}
	argv, err := a.resolveArgs(root, args)
	if err != nil {
		return err
	}
	root.SetArgs(argv)
	_, err = root.ExecuteC()
	return err
}
