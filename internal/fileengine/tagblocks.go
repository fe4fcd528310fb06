package fileengine

import "iter"

// blockMap holds a tag table's blocks by index. Block 0 is in a field of
// its own: every file with data has it, and most files (87% of a kernel
// tree's, one chunk each) have no other, so a small file's open, write
// and close make no map and pay no map access or iteration (about a
// microsecond per file of an untar, in a perf record). The others are in
// a map made with the first of them.
type blockMap struct {
	zero *tagBlock
	more map[uint64]*tagBlock
}

// get returns block g, nil if absent.
func (m *blockMap) get(g uint64) *tagBlock {
	if g == 0 {
		return m.zero
	}
	return m.more[g]
}

// put makes b block g.
func (m *blockMap) put(g uint64, b *tagBlock) {
	if g == 0 {
		m.zero = b
		return
	}
	if m.more == nil {
		m.more = make(map[uint64]*tagBlock)
	}
	m.more[g] = b
}

// del removes block g.
func (m *blockMap) del(g uint64) {
	if g == 0 {
		m.zero = nil
		return
	}
	delete(m.more, g)
}

// len is the number of blocks.
func (m *blockMap) len() int {
	n := len(m.more)
	if m.zero != nil {
		n++
	}
	return n
}

// all yields every block, block 0 first, the others in no order. The
// loop may del the block it is given.
func (m *blockMap) all() iter.Seq2[uint64, *tagBlock] {
	return func(yield func(uint64, *tagBlock) bool) {
		if m.zero != nil && !yield(0, m.zero) {
			return
		}
		for g, b := range m.more {
			if !yield(g, b) {
				return
			}
		}
	}
}
