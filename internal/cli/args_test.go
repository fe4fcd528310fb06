package cli

import (
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// parseWith parses args for cmd the way Run does (normalizeArgs, then
// pflag, then the argument count) and returns the operands.
func parseWith(t *testing.T, cmd *cobra.Command, args []string) ([]string, []string, error) {
	t.Helper()
	var warnings []string
	norm := normalizeArgs(cmd.Flags(), args, func(old, new string) { warnings = append(warnings, old+" "+new) })
	if err := cmd.ParseFlags(norm); err != nil {
		return nil, warnings, err
	}
	pos := cmd.Flags().Args()
	return pos, warnings, cmd.ValidateArgs(pos)
}

// testCommand has -f/--foreground, --passfile (with a value) and -o.
func testCommand() (*cobra.Command, *bool, *string, *[]string) {
	cmd := newCommand("x", "A B", 2, 2, groupOther, "test")
	f := cmd.Flags().BoolP("foreground", "f", false, "")
	pf := cmd.Flags().String("passfile", "", "")
	o := cmd.Flags().StringArrayP("options", "o", nil, "")
	return cmd, f, pf, o
}

func TestParseArgsInterleaved(t *testing.T) {
	tests := []struct {
		args    []string
		wantPos []string
		wantF   bool
	}{
		{[]string{"-f", "a", "b"}, []string{"a", "b"}, true},
		{[]string{"a", "-f", "b"}, []string{"a", "b"}, true},
		{[]string{"a", "b", "-f"}, []string{"a", "b"}, true},
		{[]string{"a", "b", "--f"}, []string{"a", "b"}, true},
		{[]string{"a", "--", "-f"}, []string{"a", "-f"}, false},
		// Backing names start with '-' one time in 64: operands, not flags.
		{[]string{"dir", "-VYVPobsJ_x/2m2i-Xt"}, []string{"dir", "-VYVPobsJ_x/2m2i-Xt"}, false},
		{[]string{"-f", "dir", "-Abc", "-f"}, []string{"dir", "-Abc"}, true},
		{[]string{"--passfile", "-Weird", "a", "b"}, []string{"a", "b"}, false},
	}
	for _, tt := range tests {
		cmd, f, _, _ := testCommand()
		pos, _, err := parseWith(t, cmd, tt.args)
		if err != nil || !reflect.DeepEqual(pos, tt.wantPos) || *f != tt.wantF {
			t.Errorf("parse(%q) = %q, f=%v, %v", tt.args, pos, *f, err)
		}
	}
}

// A mistyped flag stays an error rather than becoming an operand, and a
// wrong number of operands is a usage error (exit 2).
func TestParseArgsUnknownFlag(t *testing.T) {
	for _, args := range [][]string{{"a", "b", "--passfle"}, {"-x", "a", "b"}, {"a", "--no-such=V", "b"}, {"a", "b", "-passfle"}} {
		cmd, _, _, _ := testCommand()
		cmd.SetErr(io.Discard)
		if pos, _, err := parseWith(t, cmd, args); err == nil {
			t.Errorf("parse(%q) = %q, want an error", args, pos)
		}
	}
	cmd, _, _, _ := testCommand()
	if _, _, err := parseWith(t, cmd, []string{"a"}); ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), "expected 2 arguments (A B), got 1") {
		t.Errorf("one operand: %v (exit %d)", err, ExitCode(err))
	}
}

// The single-dash long spellings of Go's flag package still parse, each
// with one deprecation warning; two dashes and short flags warn nothing.
func TestNormalizeSingleDash(t *testing.T) {
	cmd, f, pf, o := testCommand()
	pos, warnings, err := parseWith(t, cmd, []string{"-passfile", "/k", "a", "-foreground", "-o", "ro", "--o=nodev", "b"})
	if err != nil || !reflect.DeepEqual(pos, []string{"a", "b"}) || *pf != "/k" || !*f || !reflect.DeepEqual(*o, []string{"ro", "nodev"}) {
		t.Fatalf("pos %q, passfile %q, f %v, o %q, %v", pos, *pf, *f, *o, err)
	}
	if want := []string{"-passfile --passfile", "-foreground --foreground"}; !reflect.DeepEqual(warnings, want) {
		t.Errorf("warnings %q, want %q", warnings, want)
	}
	cmd, _, pf, _ = testCommand()
	if _, warnings, err := parseWith(t, cmd, []string{"-passfile=/x", "a", "b"}); err != nil || *pf != "/x" || len(warnings) != 1 {
		t.Errorf("-passfile=/x: %q, %q, %v", *pf, warnings, err)
	}
	cmd, _, _, _ = testCommand()
	if _, warnings, err := parseWith(t, cmd, []string{"--passfile", "/k", "-f", "a", "b"}); err != nil || len(warnings) != 0 {
		t.Errorf("current spellings: %q, %v", warnings, err)
	}
}

// Every command's flags: each long flag also parses with one dash (as Go's
// flag package allowed), so no documented spelling is lost.
func TestEveryFlagSingleDash(t *testing.T) {
	root := (&App{Stdout: io.Discard, Stderr: io.Discard}).newRootCommand()
	// Every command of the tree, subcommands (key add|list|remove) too.
	var cmds []*cobra.Command
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			cmds = append(cmds, sub)
			walk(sub)
		}
	}
	walk(root)
	seen := 0
	for _, cmd := range cmds {
		cmd.Flags().VisitAll(func(f *pflag.Flag) {
			seen++
			if len(f.Name) < 2 || f.Name == "help" {
				return
			}
			arg := "-" + f.Name
			if f.NoOptDefVal == "" {
				arg += "=" + sampleValue(f.Name)
			}
			var warned bool
			norm := normalizeArgs(cmd.Flags(), []string{arg}, func(string, string) { warned = true })
			if !warned || len(norm) != 1 || norm[0] != "-"+arg {
				t.Errorf("%s %s: %q, warned %v", cmd.CommandPath(), arg, norm, warned)
			}
		})
	}
	if seen == 0 {
		t.Fatal("no flag visited")
	}
	if c, _, err := root.Find([]string{"key", "add"}); err != nil || c.Name() != "add" || !slices.Contains(cmds, c) {
		t.Errorf("key add is not among the commands walked (%v)", err)
	}
}

func sampleValue(name string) string {
	switch name {
	case "idle":
		return "5m"
	case "force-owner":
		return "1:1"
	case "kdf-time", "kdf-memory", "kdf-threads", "internal-notify-fd", "internal-secret-fd":
		return "1"
	}
	return "x"
}
