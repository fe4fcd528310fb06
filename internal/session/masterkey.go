package session

// MasterKey returns a copy of the master key a session opened with
// OpenWith or CreateWith keeps (nil for any other session); the caller
// clears it. It exists for one purpose: the CLI's mount unlocks the vault
// in the foreground process, where identities, plugins (PIN, touch),
// keyfiles and passwords can prompt and fail visibly, and hands the key to
// its daemon child over an inherited pipe (never argv or the
// environment), which opens with OpenWithMasterKey. Anything else should
// keep the session instead of the key.
func (s *Session) MasterKey() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ring == nil || s.ring.master == nil {
		return nil
	}
	return append([]byte(nil), s.ring.master...)
}
