package session

// CanRevoke reports whether the vault's content records master-key
// epochs (location binding), which a revoke needs: Revoke refuses
// otherwise (ErrRevokeUnbound). The CLI asks first, so that it refuses
// before it reads a password again.
func (s *Session) CanRevoke() bool { return s.binder != nil }
