package fresh

// Crash ends a writer as a crash would: no last batch, state left dirty.
func Crash(v *Vault) { v.crash() }
