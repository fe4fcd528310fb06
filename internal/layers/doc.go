// Package layers holds no code: its test enforces the direction of imports
// that docs/architecture.md draws (cmd -> cli -> mount/vault -> FUSE
// frontends/fsck -> session -> fault -> tree -> core/config -> crypto/
// backing), that the crypto packages use only the standard library and
// golang.org/x/crypto, that the CLI reaches vaults only through the session
// or the vault package, and that nothing below the FUSE frontends creates
// an errno.
package layers
