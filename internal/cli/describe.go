package cli

import (
	"flag"
	"io"
	"strings"
)

// cmdSpec is one command as completion scripts and the manual page see it.
// It is read from the command's own flag set, so the documentation cannot
// drift from what the command accepts.
type cmdSpec struct {
	name, summary, argsUsage string
	flags                    []flagSpec

	// fs, minPos and maxPos are the command's parser, for checking
	// command lines written elsewhere (contrib/systemd) against it.
	fs             *flagSet
	minPos, maxPos int
}

// flagSpec is one user-visible flag.
type flagSpec struct {
	name   string // without dashes
	arg    string // the value's name; "" for a boolean flag
	usage  string
	defval string // "" when the default is the zero value
}

// dashed is the flag as users write it: -f for one letter, --name else.
func (f flagSpec) dashed() string {
	if len(f.name) == 1 {
		return "-" + f.name
	}
	return "--" + f.name
}

// describeCommands runs every command in describe mode: each stops in its
// flag parser and hands over its flag set without doing anything.
func describeCommands() []cmdSpec {
	var specs []cmdSpec
	for _, c := range commands() {
		spec := cmdSpec{name: c.name, summary: c.summary}
		var got *flagSet
		a := &App{Stdout: io.Discard, Stderr: io.Discard, describe: func(fs *flagSet, minPos, maxPos int) {
			got, spec.minPos, spec.maxPos = fs, minPos, maxPos
		}}
		c.run(a, nil) // returns errDescribed once got is set
		if got != nil {
			spec.fs = got
			spec.argsUsage = got.argsUsage
			got.VisitAll(func(f *flag.Flag) {
				if strings.HasPrefix(f.Usage, "internal:") {
					return
				}
				spec.flags = append(spec.flags, newFlagSpec(f))
			})
		}
		specs = append(specs, spec)
	}
	return specs
}

func newFlagSpec(f *flag.Flag) flagSpec {
	arg, usage := flag.UnquoteUsage(f)
	switch arg {
	case "value":
		arg = "string"
	case "uint":
		arg = "n"
	}
	s := flagSpec{name: f.Name, arg: arg, usage: usage}
	if f.DefValue != "" && f.DefValue != "0" && f.DefValue != "false" && f.DefValue != "0s" && f.DefValue != "[]" {
		s.defval = f.DefValue
	}
	return s
}
