package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// flagSet is a command's flags with its usage line.
type flagSet struct {
	*flag.FlagSet
	app       *App
	argsUsage string
}

// newFlagSet returns a flag set that reports errors through Run (one line)
// and prints its help to stdout only on -h.
func (a *App) newFlagSet(name, argsUsage string) *flagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return &flagSet{FlagSet: fs, app: a, argsUsage: argsUsage}
}

func (fs *flagSet) printHelp() {
	w := fs.app.Stdout
	fmt.Fprintf(w, "Usage: encryptfs %s [flags] %s\n\nFlags:\n", fs.Name(), fs.argsUsage)
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

// parse parses flags that may come before, between or after the
// positional arguments ("--" ends the flags) and checks their number.
func (fs *flagSet) parse(args []string, minPos, maxPos int) ([]string, error) {
	if fs.app.describe != nil {
		fs.app.describe(fs, minPos, maxPos)
		return nil, errDescribed
	}
	var pos []string
	for {
		if len(args) > 0 && cannotBeFlag(fs, args[0]) {
			pos = append(pos, args[0])
			args = args[1:]
			continue
		}
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fs.printHelp()
				return nil, errHelp
			}
			return nil, usageErrorf("%s: %v", fs.Name(), err)
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			pos = append(pos, rest...)
			break
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
	if len(pos) < minPos || len(pos) > maxPos {
		want := fmt.Sprint(minPos)
		if maxPos != minPos {
			want = fmt.Sprintf("%d to %d", minPos, maxPos)
		}
		return nil, usageErrorf("%s: expected %s argument(s) (%s), got %d", fs.Name(), want, fs.argsUsage, len(pos))
	}
	return pos, nil
}

// cannotBeFlag reports whether arg starts with '-' but is an operand: a
// backing name (base64url starts with '-' one time in 64) or a path such as
// "-VYV.../2m2i...". Flag names are lower-case letters, digits and '-', so a
// dash-word with any other character before '=' that is not a defined flag
// is taken as an operand; a mistyped flag ("--passfle") is still an error.
func cannotBeFlag(fs *flagSet, arg string) bool {
	if len(arg) < 2 || arg[0] != '-' || arg == "--" {
		return false
	}
	name := strings.TrimLeft(arg, "-")
	name, _, _ = strings.Cut(name, "=")
	if name == "" || fs.Lookup(name) != nil || name == "h" || name == "help" {
		return false
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return true
		}
	}
	return false
}

// errDescribed: the App only collects flag sets (see describeCommands); the
// command stops before doing anything.
var errDescribed = errors.New("flags described")

// errHelp: -h was given and the help printed; the command ends with 0.
var errHelp = errors.New("help shown")

// helpOK turns errHelp into success.
func helpOK(err error) error {
	if errors.Is(err, errHelp) {
		return nil
	}
	return err
}
