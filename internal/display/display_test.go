package display

import "testing"

func TestDisplay(t *testing.T) {
	for _, c := range []struct {
		in, name, text string
	}{
		{"plain.txt", "plain.txt", "plain.txt"},
		{"Grüße 日本", "Grüße 日本", "Grüße 日本"},
		{"a\nb", `"a\nb"`, `a\nb`},
		{"a\x1b[2Jb", `"a\x1b[2Jb"`, `a\x1b[2Jb`},
		{"a\u202eb", `"a\u202eb"`, `a\u202eb`},
		{"a\u200bb", `"a\u200bb"`, `a\u200bb`},
		{"a\u2028b", `"a\u2028b"`, `a\u2028b`},
		{"a\u0085b", `"a\u0085b"`, `a\u0085b`},
		{"a\xffb", `"a\xffb"`, `a\xffb`},
		{"a\uFFFDb", "a\uFFFDb", "a\uFFFDb"}, // a real U+FFFD is text
	} {
		if got := Name(c.in); got != c.name {
			t.Errorf("Name(%q) = %s, want %s", c.in, got, c.name)
		}
		if got := Text(c.in); got != c.text {
			t.Errorf("Text(%q) = %s, want %s", c.in, got, c.text)
		}
		if Safe(c.in) != (c.name == c.in) {
			t.Errorf("Safe(%q) = %v", c.in, Safe(c.in))
		}
	}
}

func TestCount(t *testing.T) {
	for _, tc := range []struct {
		n    int
		noun string
		want string
	}{
		{0, "file", "0 files"}, {1, "file", "1 file"}, {2, "symlink", "2 symlinks"},
		{1, "directory", "1 directory"}, {3, "directory", "3 directories"}, {2, "key", "2 keys"},
	} {
		if got := Count(tc.n, tc.noun); got != tc.want {
			t.Errorf("Count(%d, %q) = %q, want %q", tc.n, tc.noun, got, tc.want)
		}
	}
}
