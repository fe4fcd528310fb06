package cli

import (
	"strings"
	"testing"
)

// TestKeyAddPromptsAndLabels: key add at a terminal says which password it
// asks for (an existing slot's, to unlock; then the new slot's, twice);
// password slots get labels that tell them apart, --label sets one; a
// removed slot's ID is not given again; key list is in ID order.
func TestKeyAddPromptsAndLabels(t *testing.T) {
	dir, _ := newVault(t, "pw", "--format", "2") // 1 password, 2 recovery
	r := runTTY(t, "pw\nnew\nnew\n", "key", "add", dir)
	r.wantTTY(t, 0, "")
	for _, p := range []string{
		"Password of an existing key slot (to unlock): ",
		"New password for the new slot: ",
		"Repeat new password for the new slot: ",
	} {
		if !strings.Contains(r.stderr, p) {
			t.Errorf("no prompt %q in:\n%s", p, r.stderr)
		}
	}
	if !strings.Contains(r.stdout, `Added key slot 3 (password, label "password 2").`) {
		t.Fatalf("stdout: %s", r.stdout)
	}
	newPw := writePassfile(t, "new")
	pw := writePassfile(t, "pw")
	if id := keyAdd(t, "", "--passfile", pw, "--new-passfile", newPw, dir); id != "4" {
		t.Fatalf("slot %s", id)
	}
	if id := keyAdd(t, "", "--passfile", pw, "--new-passfile", newPw, "--label", "laptop", dir); id != "5" {
		t.Fatalf("slot %s", id)
	}
	run(t, "", "key", "remove", "--passfile", pw, dir, "3").want(t, 0)
	run(t, "", "key", "remove", "--passfile", pw, dir, "4").want(t, 0)
	// 3 and 4 stay retired: the next slot is 6, labelled "password 2"
	// again (that label is free now).
	r = run(t, "", "key", "add", "--passfile", pw, "--new-passfile", newPw, dir)
	r.want(t, 0)
	if !strings.Contains(r.stdout, `Added key slot 6 (password, label "password 2").`) {
		t.Fatalf("stdout: %s", r.stdout)
	}
	r = run(t, "", "key", "list", dir)
	r.want(t, 0)
	var ids, labels []string
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n")[1:] {
		f := strings.Fields(line)
		ids = append(ids, f[0])
		labels = append(labels, strings.Join(f[2:], " "))
	}
	if got := strings.Join(ids, " "); got != "1 2 5 6" {
		t.Fatalf("key list IDs %q, want 1 2 5 6:\n%s", got, r.stdout)
	}
	if !strings.HasPrefix(labels[2], "laptop ") || !strings.HasPrefix(labels[3], "password 2 ") {
		t.Fatalf("labels %q", labels)
	}
}
