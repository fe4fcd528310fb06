// Package cli is the encryptfs command line: one file per subcommand. It is
// the only package that prints to the user, and it maps every error to one
// of the exit codes documented in docs/cli.md.
package cli

import (
	"bufio"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// Version is this build's version, written to new configs as their Creator.
const Version = "0.1.0"

// App holds the process's standard streams and randomness, so that the
// commands can be run from tests with other ones.
type App struct {
	Stdin  *os.File
	Stdout io.Writer
	Stderr io.Writer
	Rand   io.Reader

	// stdinLines reads lines from Stdin when it is not a terminal; shared so
	// that passwd can read an old and a new password from two lines.
	stdinLines *bufio.Reader

	// describe, when set, receives each command's flag set at parse time
	// and the command stops there: completion and man pages are generated
	// from the very flag sets the commands parse with.
	describe func(fs *flagSet, minPos, maxPos int)

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

// command is one subcommand.
type command struct {
	name    string
	summary string
	run     func(a *App, args []string) error
}

func commands() []command {
	return []command{
		{"init", "create a new vault in an empty directory", (*App).cmdInit},
		{"mount", "mount a vault (daemonizes unless -f)", (*App).cmdMount},
		{"unmount", "unmount a mounted vault", (*App).cmdUnmount},
		{"passwd", "change a vault's password", (*App).cmdPasswd},
		{"info", "show a vault's parameters (no secrets)", (*App).cmdInfo},
		{"fsck", "check a vault's integrity offline (optionally salvage)", (*App).cmdFsck},
		{"ls", "list a vault's directory without mounting", (*App).cmdLs},
		{"cat", "print files of a vault without mounting", (*App).cmdCat},
		{"export", "decrypt a vault (or part of it) into a plain directory", (*App).cmdExport},
		{"import", "encrypt a plain file or directory into a vault", (*App).cmdImport},
		{"encrypt-path", "print the backing path of a plaintext path", (*App).cmdEncryptPath},
		{"decrypt-path", "print the plaintext path of a backing path", (*App).cmdDecryptPath},
		{"version", "print the version", (*App).cmdVersion},
		{"completion", "print a bash or zsh completion script", (*App).cmdCompletion},
		{"man", "print the encryptfs(1) manual page (roff)", (*App).cmdMan},
	}
}

// Run executes args (without the program name) and returns the exit code.
func (a *App) Run(args []string) int {
	err := a.dispatch(args)
	if err == nil {
		return ExitOK
	}
	code := ExitCode(err)
	if !errors.Is(err, errQuiet) {
		fmt.Fprintf(a.Stderr, "encryptfs: %s\n", displayText(userMessage(err)))
	}
	return code
}

func (a *App) dispatch(args []string) error {
	if len(args) == 0 {
		a.usage(a.Stderr)
		return usageErrorf("no command given")
	}
	name := args[0]
	switch name {
	case "-h", "-help", "--help", "help":
		a.usage(a.Stdout)
		return nil
	case "-V", "--version":
		return a.cmdVersion(nil)
	}
	for _, c := range commands() {
		if c.name == name {
			return c.run(a, args[1:])
		}
	}
	// mount.fuse3 (fstab type fuse.encryptfs) runs "encryptfs CIPHERDIR
	// MOUNTPOINT -o OPTIONS": treat two leading paths as a mount.
	if len(args) >= 2 && !strings.HasPrefix(args[0], "-") && !strings.HasPrefix(args[1], "-") {
		if fi, err := os.Stat(args[0]); err == nil && fi.IsDir() {
			return a.cmdMount(args)
		}
	}
	return usageErrorf("unknown command %q (see encryptfs --help)", name)
}

func (a *App) usage(w io.Writer) {
	fmt.Fprintf(w, "Usage: encryptfs COMMAND [flags] ARGS\n\nCommands:\n")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-13s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "\nRun \"encryptfs COMMAND -h\" for a command's flags. Exit codes: docs/cli.md.\n")
}

func (a *App) cmdVersion(args []string) error {
	if _, err := a.newFlagSet("version", "").parse(args, 0, 0); err != nil {
		return helpOK(err)
	}
	fmt.Fprintf(a.Stdout, "encryptfs %s\n", Version)
	return nil
}
