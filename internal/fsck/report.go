package fsck

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/encryptfs/encryptfs/internal/display"
)

// maxRangesShown bounds the ranges printed per problem in the text form
// (the JSON form has all of them).
const maxRangesShown = 16

// WriteText writes the report for a human: one line per problem, then the
// salvage errors and a summary line.
func WriteText(w io.Writer, r *Report) error {
	b := bufio.NewWriter(w)
	for _, p := range r.Problems {
		fmt.Fprintln(b, ProblemLine(p))
	}
	for _, c := range r.Conflicts {
		fmt.Fprintf(b, "note: %s\n", ProblemLine(c))
	}
	for _, h := range r.Hints {
		fmt.Fprintf(b, "hint: %s\n", h)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(b, "note: %s\n", n)
	}
	for _, e := range r.SalvageErrors {
		fmt.Fprintf(b, "salvage error: %s\n", e)
	}
	fmt.Fprintln(b, SummaryLine(r))
	return b.Flush()
}

// ProblemLine renders one problem on one line:
// "KIND CIPHERPATH (plain PATH): bytes A-B, ...: DETAIL [salvaged as X]".
func ProblemLine(p Problem) string {
	var s strings.Builder
	fmt.Fprintf(&s, "%s %s", p.Kind, quoteIfNeeded(p.CipherPath))
	if p.PlainPath != "" {
		fmt.Fprintf(&s, " (plain %s)", quoteIfNeeded(p.PlainPath))
	} else {
		s.WriteString(" (plain name unknown)")
	}
	if len(p.Ranges) > 0 {
		s.WriteString(": bytes ")
		for i, rg := range mergeRanges(p.Ranges) {
			if i == maxRangesShown {
				fmt.Fprintf(&s, ", ... (%d ranges in all)", len(mergeRanges(p.Ranges)))
				break
			}
			if i > 0 {
				s.WriteString(", ")
			}
			fmt.Fprintf(&s, "%d-%d", rg.Start, rg.End-1)
		}
	}
	fmt.Fprintf(&s, ": %s", p.Detail)
	if p.SalvagedAs != "" {
		fmt.Fprintf(&s, " [salvaged as %s]", quoteIfNeeded(p.SalvagedAs))
	}
	return s.String()
}

// SummaryLine is the last line of the text report.
func SummaryLine(r *Report) string {
	s := r.Summary
	state := "clean"
	if !r.Clean {
		kinds := make([]string, 0, len(s.ByKind))
		for k, n := range s.ByKind {
			kinds = append(kinds, fmt.Sprintf("%d %s", n, k))
		}
		slices.Sort(kinds)
		state = display.Count(s.Problems, "problem")
		if len(kinds) > 0 {
			state += " (" + strings.Join(kinds, ", ") + ")"
		}
		if r.Interrupted {
			state += ", INTERRUPTED: only part of the vault was checked"
		}
	}
	if n := len(r.Notes) + len(r.Conflicts); n > 0 {
		state += ", " + display.Count(n, "note")
	}
	line := fmt.Sprintf("checked %s, %s (%s), %s, %d other, %s: %s",
		display.Count(int(s.Dirs), "directory"), display.Count(int(s.Files), "file"), display.Count(int(s.PlainBytes), "byte"),
		display.Count(int(s.Symlinks), "symlink"), s.Others, display.Count(int(s.Xattrs), "xattr"), state)
	if r.Salvage != "" {
		line += fmt.Sprintf("; salvaged into %s (%d bytes zero-filled", r.Salvage, s.SalvageZeroBytes)
		if len(r.SalvageErrors) > 0 {
			line += ", " + display.Count(len(r.SalvageErrors), "salvage error")
		}
		line += ")"
	}
	return line
}

// mergeRanges joins adjacent ranges (consecutive bad chunks) for display.
func mergeRanges(rs []Range) []Range {
	var out []Range
	for _, r := range rs {
		if n := len(out); n > 0 && out[n-1].End == r.Start {
			out[n-1].End = r.End
			continue
		}
		out = append(out, r)
	}
	return out
}

// quoteIfNeeded quotes paths with spaces, quotes or parentheses, or with
// a character that is not safe on a terminal (internal/display, the rule
// the CLI uses), so each problem stays one parseable line whatever a name
// contains.
func quoteIfNeeded(s string) string {
	if !display.Safe(s) || strings.ContainsAny(s, " \"()") {
		return strconv.Quote(s)
	}
	return s
}
