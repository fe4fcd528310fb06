package backing

// Tee returns an FS that reports every event first to f's observer (if f
// has one) and then to obs: a second observer of the same changes
// (internal/fresh's manifest writer beside internal/crashsim's recorder).
func Tee(f *FS, obs Observer) *FS {
	if !f.observed() {
		return NewFS(obs)
	}
	return NewFS(tee{f.obs, obs})
}

type tee [2]Observer

func (t tee) Observe(ev Event) {
	t[0].Observe(ev)
	t[1].Observe(ev)
}
