// Package buf holds the one slice helper the AEAD-style Seal and Open
// functions of the crypto packages share.
package buf

// SliceForAppend extends in by n bytes, reusing its capacity when it can
// (so that Seal(dst[:0], ...) writes in place), and returns the whole slice
// and the n new bytes.
func SliceForAppend(in []byte, n int) (whole, tail []byte) {
	if total := len(in) + n; cap(in) >= total {
		whole = in[:total]
	} else {
		whole = make([]byte, total)
		copy(whole, in)
	}
	return whole, whole[len(in):]
}
