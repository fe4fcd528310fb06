// Package layers holds no code: its test enforces, rule by rule, the
// picture of packages and imports that docs/architecture.md draws:
// imports point down the tiers (cmd -> cli -> mount/vault -> FUSE
// frontends/fsck/transport -> session -> fresh -> fault -> tree ->
// keyslot -> core/config -> crypto/backing); the doors reach a vault only
// through the session, except for the known violations listed there,
// which may only shrink; the crypto packages use only the standard
// library and golang.org/x/crypto; nothing below the FUSE frontends
// creates an errno; and the leaves import nothing of ours.
package layers
