package cli

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"golang.org/x/term"
)

// maxSecretLine bounds a password line read from a file, a program or stdin.
const maxSecretLine = 4096

// passSource says where a password comes from: a file, a program, or
// otherwise the terminal (or stdin when it is not a terminal).
type passSource struct {
	passfile string
	extpass  string
}

// readPassword returns a password. On a terminal, confirm asks twice.
// The bytes are the caller's to wipe.
func (a *App) readPassword(src passSource, prompt string, confirm bool) ([]byte, error) {
	var pw []byte
	var err error
	switch {
	case src.passfile != "" && src.extpass != "":
		return nil, usageErrorf("give either --passfile or --extpass, not both")
	case src.passfile != "":
		pw, err = readPassfile(src.passfile)
	case src.extpass != "":
		pw, err = a.runExtpass(src.extpass)
	case a.stdinIsTerminal():
		pw, err = a.promptTerminal(prompt, confirm)
	default:
		pw, err = a.readStdinLine("password")
	}
	if err != nil {
		return nil, withCode(ExitPassword, err)
	}
	if len(pw) == 0 {
		return nil, errorfCode(ExitPassword, "the password is empty; an empty password is refused (type one, or give --passfile FILE)")
	}
	return pw, nil
}

func (a *App) stdinIsTerminal() bool {
	return a.Stdin != nil && term.IsTerminal(int(a.Stdin.Fd()))
}

// promptTerminal reads without echo, on stderr so stdout stays clean.
func (a *App) promptTerminal(prompt string, confirm bool) ([]byte, error) {
	fd := int(a.Stdin.Fd())
	fmt.Fprintf(a.Stderr, "%s: ", prompt)
	pw, err := term.ReadPassword(fd)
	fmt.Fprintln(a.Stderr)
	if err != nil {
		return nil, fmt.Errorf("reading password from the terminal: %w", err)
	}
	if !confirm || len(pw) == 0 {
		// An empty password is refused (readPassword) before it is asked
		// a second time.
		return pw, nil
	}
	fmt.Fprintf(a.Stderr, "Repeat %s: ", strings.ToLower(prompt[:1])+prompt[1:])
	again, err := term.ReadPassword(fd)
	fmt.Fprintln(a.Stderr)
	if err != nil {
		clear(pw)
		return nil, fmt.Errorf("reading password from the terminal: %w", err)
	}
	defer clear(again)
	if !bytes.Equal(pw, again) {
		clear(pw)
		return nil, errors.New("the passwords do not match")
	}
	return pw, nil
}

// readStdinLine reads one line from a non-terminal stdin.
func (a *App) readStdinLine(what string) ([]byte, error) {
	if a.Stdin == nil {
		return nil, fmt.Errorf("no %s given and no stdin", what)
	}
	if a.stdinLines == nil {
		a.stdinLines = bufio.NewReaderSize(a.Stdin, maxSecretLine)
	}
	line, err := readLine(a.stdinLines)
	if err != nil {
		return nil, fmt.Errorf("reading %s from stdin: %w", what, err)
	}
	return line, nil
}

// readLine returns the first line of r without its line ending.
func readLine(r *bufio.Reader) ([]byte, error) {
	line, err := r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		return nil, fmt.Errorf("line longer than %d bytes", maxSecretLine)
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	if errors.Is(err, io.EOF) && len(line) == 0 {
		return nil, errors.New("no input")
	}
	line = bytes.TrimSuffix(line, []byte("\n"))
	line = bytes.TrimSuffix(line, []byte("\r"))
	return bytes.Clone(line), nil
}

// readPassfile uses the first line of a file.
func readPassfile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("passfile: %w", err)
	}
	defer f.Close()
	line, err := readLine(bufio.NewReaderSize(f, maxSecretLine))
	if err != nil {
		return nil, fmt.Errorf("passfile %s: %w", path, err)
	}
	return line, nil
}

// runExtpass runs a program (split on spaces, no shell) and uses the first
// line of its output. Its stderr and stdin are ours, so it can prompt.
func (a *App) runExtpass(cmdline string) ([]byte, error) {
	argv := strings.Fields(cmdline)
	if len(argv) == 0 {
		return nil, errors.New("extpass: empty command")
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin = a.Stdin
	cmd.Stderr = a.Stderr
	out, err := cmd.Output()
	defer clear(out)
	if err != nil {
		return nil, fmt.Errorf("extpass %q: %w", argv[0], err)
	}
	line, err := readLine(bufio.NewReaderSize(bytes.NewReader(out), maxSecretLine))
	if err != nil {
		return nil, fmt.Errorf("extpass %q output: %w", argv[0], err)
	}
	return line, nil
}
