package names

import (
	"strings"
	"testing"
)

func TestSplitLongForeign(t *testing.T) {
	long, _ := Backing(strings.Repeat("A", MaxBackingLen+1))
	h := strings.TrimPrefix(long, LongNamePrefix)
	for _, tc := range []struct {
		in, suffix string
		ok         bool
	}{
		{long + " (1)", " (1)", true},
		{long + ".sync-conflict-20261122-101010-ABCDEFG", ".sync-conflict-20261122-101010-ABCDEFG", true},
		{"encryptfs.long.sync-conflict-20261122-101010-ABCDEFG." + h, ".sync-conflict-20261122-101010-ABCDEFG", true},
		{"encryptfs.long (conflicted copy 2026-11-22)." + h, " (conflicted copy 2026-11-22)", true},
		{"encryptfs.long (Ann's conflicted copy 2026-11-22)." + h, " (Ann's conflicted copy 2026-11-22)", true},
		{long + " (1)\u202e", "", false},
		{long + "\n", "", false},
		{long + " copy", "", false},
		{"encryptfs.long.sync-conflict-x." + h, "", false},
		{"encryptfs.long\u202e." + h, "", false},
		{long, "", false},                           // the entry itself
		{long + LongNameSuffix, "", false},          // its sidecar
		{long + " (1)" + LongNameSuffix, "", false}, // a copy of the sidecar
		{"encryptfs.long." + h[1:] + " (1)", "", false},
		{"encryptfs.long." + h, "", false},
		{"encryptfs.conf (1)", "", false},
		{"x" + long + " (1)", "", false},
	} {
		l, suffix, ok := SplitLongForeign(tc.in)
		if ok != tc.ok || suffix != tc.suffix || ok && l != long {
			t.Errorf("SplitLongForeign(%q) = %q, %q, %v; want %q, %v", tc.in, l, suffix, ok, tc.suffix, tc.ok)
		}
	}
}
