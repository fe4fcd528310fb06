package crashsim

import "fmt"

// durable reports, for each op before crash point k (a crash after ops
// 0..k-1), whether a barrier before k made it durable (see the package
// comment): a later fsync of the node it changes (data ops) or of a
// directory whose entries it changes (entry ops), and then everything such
// an op builds on.
func (r *Recorder) durable(k int) []bool {
	lastSync := map[int]int{} // node -> index of its last fsync before k
	for i := 0; i < k; i++ {
		if r.ops[i].Kind == OpFsync {
			lastSync[r.ops[i].Node] = i
		}
	}
	synced := func(node, i int) bool {
		j, ok := lastSync[node]
		return ok && j > i
	}
	d := make([]bool, k)
	var mark func(i int)
	mark = func(i int) {
		if d[i] {
			return
		}
		d[i] = true
		for _, j := range r.deps[i] {
			mark(j)
		}
	}
	for i := k - 1; i >= 0; i-- {
		op := &r.ops[i]
		switch {
		case op.Kind == OpFsync:
			d[i] = true
		case op.entryOp():
			if synced(op.Dir, i) || op.Dir2 >= 0 && synced(op.Dir2, i) {
				mark(i)
			}
		default:
			if synced(op.Node, i) {
				mark(i)
			}
		}
	}
	return d
}

// Pending returns the ops before crash point k that no barrier made
// durable: the ones a crash at k may lose.
func (r *Recorder) Pending(k int) []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []int
	for i, ok := range r.durable(k) {
		if !ok {
			out = append(out, i)
		}
	}
	return out
}

// StateAt rebuilds the backing store after a crash at point k: the base
// state with every durable op before k applied, and of the pending ones
// those for which keep returns true (and whose precondition still holds).
func (r *Recorder) StateAt(k int, keep func(op int) bool) (*State, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if k < 0 || k > len(r.ops) {
		return nil, fmt.Errorf("crashsim: crash point %d of %d", k, len(r.ops))
	}
	s := r.base.Clone()
	for i, dur := range r.durable(k) {
		op := &r.ops[i]
		if dur {
			if !s.apply(op) && s.present(op) {
				return nil, fmt.Errorf("crashsim: durable op %d (%+v) does not apply: the model is inconsistent", i, *op)
			}
			continue
		}
		if keep(i) {
			s.apply(op)
		}
	}
	return s, nil
}

// present reports whether the nodes op works on exist in s: a durable op
// on a node whose creation was lost is lost with it (the inode is
// unreachable), any other durable op that does not apply is a bug of the
// model.
func (s *State) present(op *Op) bool {
	if op.entryOp() {
		return s.dir(op.Dir) != nil && (op.Dir2 < 0 || s.dir(op.Dir2) != nil)
	}
	return s.Nodes[op.Node] != nil
}
