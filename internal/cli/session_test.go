package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"

	"github.com/encryptfs/encryptfs/vault"
)

// configShape is the sorted key set of a config file and of its Params.
func configShape(t *testing.T, dir string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "encryptfs.conf"))
	if err != nil {
		t.Fatal(err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k, v := range top {
		keys = append(keys, k)
		var sub map[string]json.RawMessage
		if json.Unmarshal(v, &sub) == nil {
			for sk := range sub {
				keys = append(keys, k+"."+sk)
			}
		}
	}
	sort.Strings(keys)
	return keys
}

// TestInitAndVaultCreateAgree: encryptfs init and vault.Create go through
// the same creation code (internal/session.Create): their configs have the
// same shape and each vault opens through the other door.
func TestInitAndVaultCreateAgree(t *testing.T) {
	pf := writePassfile(t, "pw")
	byInit := filepath.Join(t.TempDir(), "init")
	run(t, "", append(append([]string{"init", "--format", "1", "--passfile", pf}, cheapKDF...), byInit)...).want(t, 0)

	byLib := t.TempDir()
	v, err := vault.Create(byLib, []byte("pw"), vault.Options{KDFTime: 1, KDFMemoryKiB: 8192, KDFThreads: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := v.WriteFile("from-lib", []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	v.Close()

	if a, b := configShape(t, byInit), configShape(t, byLib); !reflect.DeepEqual(a, b) {
		t.Errorf("config shapes differ:\ninit:  %v\nvault: %v", a, b)
	}
	if ents, _ := os.ReadDir(byInit); len(ents) != len(mustReadDir(t, byLib))-1 {
		t.Errorf("init made %d entries, vault.Create %d (+1 file)", len(ents), len(mustReadDir(t, byLib)))
	}
	// init's vault opens with the library, the library's with the CLI.
	v, err = vault.Open(byInit, []byte("pw"))
	if err != nil {
		t.Fatalf("vault.Open of init's vault: %v", err)
	}
	v.Close()
	if r := run(t, "", "ls", "--passfile", pf, byLib); r.code != 0 || r.stdout != "from-lib\n" {
		t.Fatalf("ls of vault.Create's vault: %d %q %q", r.code, r.stdout, r.stderr)
	}
}

func mustReadDir(t *testing.T, dir string) []os.DirEntry {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return ents
}
