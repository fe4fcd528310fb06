package names

import (
	"regexp"
	"strings"
	"testing"
)

// TestConflictSuffix: exactly the documented sync-tool patterns are
// accepted (docs/format.md §6.4); anything else, in particular text with
// control, bidi or escape characters, is not.
func TestConflictSuffix(t *testing.T) {
	for _, s := range []string{
		".sync-conflict-20261122-101010-ABCDEFG",
		".sync-conflict-20260101-000000-7Q2ZZ00",
		// Made by Debian 12's syncthing 1.19.2 (internal/cli's
		// TestSyncthing): the device part is the short device ID, 7
		// base32 characters [A-Z2-7].
		".sync-conflict-20261123-142758-3M2RA5Q",
		".sync-conflict-20261123-143149-EKCU447",
		" (Ann's conflicted copy 2026-11-22)",
		" (LAPTOP-7's conflicted copy 2026-11-22)",
		" (" + strings.Repeat("d", 64) + "'s conflicted copy 2026-11-22)",
		" (conflicted copy 2026-11-22)",
		" (conflicted copy 2026-11-22 101010)",
		" (1)",
		" (42)",
		" (9999)",
	} {
		if !IsConflictSuffix(s) {
			t.Errorf("IsConflictSuffix(%q) = false, want true", s)
		}
	}
	for _, s := range []string{
		"",
		"~",
		" (0)",
		" (01)",
		" (10000)",
		" (1",
		" (1) (2)",
		" (1)\n",
		" (1)\u202e",
		"\u202e (1)",
		" (1)\x1b[31m",
		".sync-conflict-20261122-101010-ABCDEF",
		".sync-conflict-20261122-101010-abcdefg",
		".sync-conflict-20261122-1",
		".sync-conflict-20261122-101010-ABCDEFG.sh",
		" (conflicted copy)",
		" (conflicted copy 2026-11-22 1010)",
		" (Ann\x1b's conflicted copy 2026-11-22)",
		" (Ann\u202e's conflicted copy 2026-11-22)",
		" (Änn's conflicted copy 2026-11-22)",
		" (A(n)'s conflicted copy 2026-11-22)",
		" (" + strings.Repeat("d", 65) + "'s conflicted copy 2026-11-22)",
		"'s conflicted copy 2026-11-22)",
		"/../key",
		"\nreadme.sh",
		" readme.sh",
	} {
		if IsConflictSuffix(s) {
			t.Errorf("IsConflictSuffix(%q) = true, want false", s)
		}
	}
}

// TestSplitConflict: a displayed name splits into the original name and
// its one suffix.
func TestSplitConflict(t *testing.T) {
	for _, tc := range []struct{ in, orig, suffix string }{
		{"report.txt (1)", "report.txt", " (1)"},
		{"a (1) (2)", "a (1)", " (2)"},
		{"x (y).sync-conflict-20261122-101010-ABCDEFG", "x (y)", ".sync-conflict-20261122-101010-ABCDEFG"},
		{"doc (Ann's laptop's conflicted copy 2026-11-22)", "doc", " (Ann's laptop's conflicted copy 2026-11-22)"},
		{"doc (conflicted copy 2026-11-22 101010)", "doc", " (conflicted copy 2026-11-22 101010)"},
		{" (1)", "", ""},
		{"report.txt", "", ""},
		{"report.txt (1)\u202e", "", ""},
		{"readme.sh\u202e (1)", "readme.sh\u202e", " (1)"}, // the original name is checked by decryption
	} {
		o, s, ok := SplitConflict(tc.in)
		if o != tc.orig || s != tc.suffix || ok != (tc.suffix != "") {
			t.Errorf("SplitConflict(%q) = %q, %q, %v; want %q, %q", tc.in, o, s, ok, tc.orig, tc.suffix)
		}
		checkSplitBySearch(t, tc.in)
	}
	// Near misses of each shape: a Syncthing suffix a character short or
	// long, parentheses inside, a device name too long, nothing before.
	for _, in := range []string{
		"x.sync-conflict-20261122-101010-ABCDEF",
		"x.sync-conflict-20261122-101010-ABCDEFGH",
		".sync-conflict-20261122-101010-ABCDEFG",
		"x (a (1))",
		"x (" + strings.Repeat("d", 65) + "'s conflicted copy 2026-11-22)",
		"x (" + strings.Repeat("d", 64) + "'s conflicted copy 2026-11-22)",
		"x (0)", "x (10000)", "x(1)", "x  (1)", "x (conflicted copy 2026-11-22 10101)",
	} {
		checkSplitBySearch(t, in)
	}
}

// conflictTail is how SplitConflict was first written: the pattern
// searched for along the whole name, ending at its end.
var conflictTail = regexp.MustCompile(conflictPatterns + `$`)

// checkSplitBySearch fails if SplitConflict and a search with
// conflictTail disagree on plain.
func checkSplitBySearch(t *testing.T, plain string) {
	t.Helper()
	o, s, ok := SplitConflict(plain)
	var wo, ws string
	loc := conflictTail.FindStringIndex(plain)
	wok := loc != nil && loc[0] > 0
	if wok {
		wo, ws = plain[:loc[0]], plain[loc[0]:]
	}
	if o != wo || s != ws || ok != wok {
		t.Fatalf("SplitConflict(%q) = %q, %q, %v; the pattern searched for gives %q, %q, %v", plain, o, s, ok, wo, ws, wok)
	}
}

// FuzzSplitForeign: never panics; an accepted split is an encoded prefix
// and one accepted suffix, made of printable ASCII only.
func FuzzSplitForeign(f *testing.F) {
	enc := strings.Repeat("A", 43)
	f.Add(enc + " (1)")
	f.Add(enc + ".sync-conflict-20261122-101010-ABCDEFG")
	f.Add(enc + " (Ann's conflicted copy 2026-11-22)")
	f.Add(enc + " (1)\u202e")
	f.Add(enc + "\n")
	f.Fuzz(func(t *testing.T, b string) {
		e, suffix, ok := SplitForeign(b)
		if !ok {
			return
		}
		if e+suffix != b || e == "" || !IsConflictSuffix(suffix) || len(suffix) > MaxConflictSuffixLen {
			t.Fatalf("SplitForeign(%q) = %q, %q", b, e, suffix)
		}
		checkPrintableASCII(t, suffix)
	})
}

// FuzzSplitConflict: never panics; a split puts the name back together
// and its suffix is accepted and printable ASCII.
func FuzzSplitConflict(f *testing.F) {
	f.Add("report.txt (1)")
	f.Add("a (b's conflicted copy 2026-11-22)")
	f.Add("a\u202e (1)")
	f.Add("x (y).sync-conflict-20261122-101010-ABCDEFG")
	f.Add("x (a (1))")
	f.Fuzz(func(t *testing.T, plain string) {
		checkSplitBySearch(t, plain)
		o, suffix, ok := SplitConflict(plain)
		if !ok {
			return
		}
		if o+suffix != plain || o == "" || !IsConflictSuffix(suffix) {
			t.Fatalf("SplitConflict(%q) = %q, %q", plain, o, suffix)
		}
		checkPrintableASCII(t, suffix)
	})
}

func checkPrintableASCII(t *testing.T, s string) {
	t.Helper()
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			t.Fatalf("suffix %q has byte %#x outside printable ASCII", s, s[i])
		}
	}
}
