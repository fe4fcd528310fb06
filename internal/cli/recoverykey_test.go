package cli

import (
	"strings"
	"testing"
)

// TestRecoveryKeyAtTerminal: the recovery key init prints is one line; at
// a terminal the prompt says what it wants, and a key that arrives over
// two lines (a paste of an older two-line key, or typed in groups) is read
// whole, so that its second half never reaches the shell. A line that
// cannot be part of a key, or too many lines, stops the reading with 7.
func TestRecoveryKeyAtTerminal(t *testing.T) {
	dir, key := newVault(t, "pw", "--format", "2")
	if strings.Contains(key, "\n") || strings.Count(key, "-") != 7 {
		t.Fatalf("init printed the recovery key as %q, want one line of dash-separated groups", key)
	}
	half := 4*9 - 1 // the dash after the fourth group
	twoLines := key[:half] + "\n" + key[half+1:] + "\n"

	r := runTTY(t, twoLines, "key", "list", "--verify", "--recovery-key", dir)
	r.wantTTY(t, 0, "")
	if !strings.Contains(r.stderr, "Recovery key (64 hex digits): ") {
		t.Fatalf("prompt does not name the recovery key:\n%s", r.stderr)
	}
	if !strings.Contains(r.stdout, "(unlocked this time)") || !strings.Contains(r.stdout, "recovery") {
		t.Fatalf("the two-line key did not unlock the recovery slot:\n%s", r.stdout)
	}
	// The old flag name still works, with the key on one line.
	runTTY(t, key+"\n", "key", "list", "--verify", "--masterkey", dir).wantTTY(t, 0, "")
	// Typed in eight groups, one per line.
	runTTY(t, strings.ReplaceAll(key, "-", "\n")+"\n", "key", "list", "--verify", "--recovery-key", dir).wantTTY(t, 0, "")

	want := "encryptfs: the recovery key must be 64 hex digits (groups separated by spaces, dashes or line breaks)\n"
	// A password typed by mistake: refused at the first line.
	runTTY(t, "pw\n"+key+"\n", "key", "list", "--verify", "--recovery-key", dir).wantTTY(t, ExitPassword, want)
	// Too many digits on the second line.
	runTTY(t, key[:half]+"\n"+key+"\n", "key", "list", "--verify", "--recovery-key", dir).wantTTY(t, ExitPassword, want)
	// Blank lines do not go on forever.
	runTTY(t, strings.Repeat("\n", 20)+key+"\n", "key", "list", "--verify", "--recovery-key", dir).wantTTY(t, ExitPassword, want)
	// A wrong key is a wrong credential (3), not a malformed one.
	wrong := strings.Repeat("0", 64)
	runTTY(t, wrong+"\n", "key", "list", "--verify", "--recovery-key", dir).wantTTY(t, ExitWrongPassword, "")
}

// TestRecoveryKeyFromStdin: the same bounds on a non-terminal stdin; a
// two-line key still works there.
func TestRecoveryKeyFromStdin(t *testing.T) {
	dir, key := newVault(t, "pw", "--format", "2")
	half := 4*9 - 1
	run(t, key[:half]+"\n"+key[half+1:]+"\n", "key", "list", "--verify", "--recovery-key", dir).want(t, 0)
	r := run(t, strings.Repeat("\n", 20)+key+"\n", "key", "list", "--verify", "--recovery-key", dir)
	r.want(t, ExitPassword)
	if !strings.Contains(r.stderr, "recovery key must be 64 hex digits") {
		t.Fatalf("stderr: %s", r.stderr)
	}
}
