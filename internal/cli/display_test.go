package cli

import "testing"

func TestDisplayName(t *testing.T) {
	for in, want := range map[string]string{
		"report.txt":       "report.txt",
		"café ☕ 日本":        "café ☕ 日本",
		"a b (1)":          "a b (1)",
		"evil\u202etxt.sh": `"evil\u202etxt.sh"`,
		"two\nlines":       `"two\nlines"`,
		"\x1b[2Jclear":     `"\x1b[2Jclear"`,
		"bad\xffutf8":      `"bad\xffutf8"`,
		"lrm\u200e":        `"lrm\u200e"`,
		"iso\u2066x\u2069": `"iso\u2066x\u2069"`,
		"zw\u200bsp":       `"zw\u200bsp"`,
		"c1\u0085":         `"c1\u0085"`,
	} {
		if got := displayName(in); got != want {
			t.Errorf("displayName(%q) = %s, want %s", in, got, want)
		}
	}
	if got := displayText("open a\nb: no such file"); got != `open a\nb: no such file` {
		t.Errorf("displayText = %s", got)
	}
}
