package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"
)

// flagSpec is how --help and the manual pages name a flag: "-o, --options
// OPTIONS", "--ro", "--format N". The placeholder is the backquoted word
// of the usage string (pflag's rule), else one by type: never cobra's raw
// type names ("int", "string") or a bool's "[=false]".
func flagSpec(f *pflag.Flag) (spec, usage string) {
	name, usage := pflag.UnquoteUsage(f)
	if !strings.Contains(f.Usage, "`") {
		name = placeholderFor(f)
	}
	spec = "--" + f.Name
	if f.Shorthand != "" && f.ShorthandDeprecated == "" {
		spec = "-" + f.Shorthand + ", " + spec
	}
	if name != "" && f.NoOptDefVal == "" {
		spec += " " + name
	}
	return spec, usage
}

// placeholderFor names a flag's value by its type.
func placeholderFor(f *pflag.Flag) string {
	switch f.Value.Type() {
	case "bool", "boolfunc":
		return ""
	case "int", "uint", "int64", "uint64", "int32", "uint32", "uint8", "count":
		return "N"
	case "duration":
		return "DURATION"
	}
	return strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
}

// flagDefault is " (default X)" for a flag whose default is worth saying.
func flagDefault(f *pflag.Flag) string {
	switch f.DefValue {
	case "", "0", "false", "[]", "0s", "-1":
		return ""
	}
	if f.Value.Type() == "string" {
		return fmt.Sprintf(" (default %q)", f.DefValue)
	}
	return " (default " + f.DefValue + ")"
}

// flagUsages lists the visible flags of fs for --help, aligned.
func flagUsages(fs *pflag.FlagSet) string {
	type line struct{ spec, usage string }
	var lines []line
	width := 0
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden || f.Deprecated != "" {
			return
		}
		spec, usage := flagSpec(f)
		if f.Shorthand == "" {
			spec = "    " + spec
		}
		lines = append(lines, line{spec, usage + flagDefault(f)})
		width = max(width, len(spec))
	})
	var b strings.Builder
	for _, l := range lines {
		fmt.Fprintf(&b, "  %-*s   %s\n", width, l.spec, l.usage)
	}
	return b.String()
}
