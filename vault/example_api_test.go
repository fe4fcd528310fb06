package vault_test

import (
	"fmt"
	"log"
	"os"

	"github.com/encryptfs/encryptfs/vault"
)

// Create a vault, write a file and read it back, without FUSE.
func Example() {
	dir, err := os.MkdirTemp("", "vault-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	// The KDF floor keeps the example fast; use the defaults (zero) for real vaults.
	opts := vault.Options{KDFTime: 1, KDFMemoryKiB: 8192, KDFThreads: 1}
	v, err := vault.Create(dir, []byte("password"), opts)
	if err != nil {
		log.Fatal(err)
	}
	if err := v.MkdirAll("notes", 0o700); err != nil {
		log.Fatal(err)
	}
	if err := v.WriteFile("notes/todo.txt", []byte("buy milk\n"), 0o600); err != nil {
		log.Fatal(err)
	}
	v.Close()

	v, err = vault.Open(dir, []byte("password"))
	if err != nil {
		log.Fatal(err)
	}
	defer v.Close()
	data, err := v.ReadFile("notes/todo.txt")
	if err != nil {
		log.Fatal(err)
	}
	entries, _ := v.ReadDir("notes")
	fmt.Printf("%d entry: %s: %s", len(entries), entries[0].Name(), data)
	// Output: 1 entry: todo.txt: buy milk
}
