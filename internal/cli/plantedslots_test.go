package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/encryptfs/encryptfs/internal/config"
)

// TestPlantedPasswordSlotsCLI (L5): a config into which the storage
// attacker copied the password slot 8 times is refused before any
// Argon2id run, with one line and exit 5 (a corrupt or edited config);
// the run takes what 1 cheap KDF run takes, not 9.
func TestPlantedPasswordSlotsCLI(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "v")
	pf := writePassfile(t, "pw")
	run(t, "", append(append([]string{"init", "--passfile", pf, "--no-recovery-key"}, cheapKDF...), dir)...).want(t, 0)
	path := filepath.Join(dir, config.FileName)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	start := bytes.Index(data, []byte("\"Slots\": [\n"))
	end := bytes.Index(data, []byte("\n\t\t}\n\t]"))
	if start < 0 || end < start {
		t.Fatalf("unexpected config layout:\n%s", data)
	}
	start += len("\"Slots\": [\n")
	slot := data[start : end+len("\n\t\t}")]
	if !bytes.Contains(slot, []byte(`"ID": 1,`)) || bytes.Count(slot, []byte(`"ID"`)) != 1 {
		t.Fatalf("want one slot, got:\n%s", slot)
	}
	var planted []byte
	for i := range 8 {
		planted = append(planted, bytes.Replace(slot, []byte(`"ID": 1,`), fmt.Appendf(nil, `"ID": %d,`, 100+i), 1)...)
		planted = append(planted, ",\n"...)
	}
	forged := append(append(append([]byte(nil), data[:start]...), planted...), data[start:]...)
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, forged, 0o600); err != nil {
		t.Fatal(err)
	}
	r := run(t, "", "ls", "--passfile", pf, dir)
	r.want(t, ExitCorruptConfig)
	if lines := strings.Count(strings.TrimSpace(r.stderr), "\n") + 1; lines != 1 || !strings.Contains(r.stderr, "password slots") {
		t.Fatalf("stderr (%d lines): %q", lines, r.stderr)
	}
}
