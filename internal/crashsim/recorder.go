package crashsim

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/encryptfs/encryptfs/internal/backing"
	"golang.org/x/sys/unix"
)

// Recorder turns the backing.Events of one backing directory into Ops on a
// model of it. Make it with NewRecorder before the first change, pass it
// to backing.NewFS, and read Err after the workload: an event that could
// not be placed in the model (an inode the recorder never saw created) is
// a gap in the recording, and a test must not trust it.
type Recorder struct {
	mu   sync.Mutex
	base *State
	live *State // base with every op applied: what the disk holds now
	ops  []Op
	deps [][]int // deps[i]: the earlier ops op i builds on
	ids  map[uint64]int
	next int
	// born[node] is the op that created node (-1: it was in base);
	// origin[entry] the op that put entry where it is; lastEntry[dir]
	// the last op that changed dir's entries.
	born      map[int]int
	origin    map[entryKey]int
	lastEntry map[int]int
	err       error
}

type entryKey struct {
	dir  int
	name string
}

// NewRecorder snapshots the backing directory dir as the base state.
func NewRecorder(dir string) (*Recorder, error) {
	base, ids, err := snapshot(dir)
	if err != nil {
		return nil, err
	}
	next := 0
	for id := range base.Nodes {
		next = max(next, id+1)
	}
	return &Recorder{
		base: base, live: base.Clone(), ids: ids, next: next,
		born: map[int]int{}, origin: map[entryKey]int{}, lastEntry: map[int]int{},
	}, nil
}

// Len is the number of ops recorded so far: the crash points are 0..Len().
func (r *Recorder) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.ops)
}

// Ops returns a copy of the recorded ops.
func (r *Recorder) Ops() []Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.ops)
}

// Err returns the first event the recorder could not place in its model.
func (r *Recorder) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// Live returns a copy of the model with every recorded op applied.
func (r *Recorder) Live() *State {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.live.Clone()
}

// Observe implements backing.Observer.
func (r *Recorder) Observe(ev backing.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.observe(ev); err != nil && r.err == nil {
		r.err = fmt.Errorf("crashsim: event %d %+v: %w", len(r.ops), ev.Op, err)
	}
}

func (r *Recorder) observe(ev backing.Event) error {
	switch ev.Op {
	case backing.OpOpen:
		dir, err := r.node(ev.Dir, "")
		if err != nil {
			return err
		}
		id, exists := r.live.Nodes[dir].Entries[ev.Name]
		if !exists {
			if ev.Flags&unix.O_CREAT == 0 {
				return errors.New("opened a file the model does not have")
			}
			if id, err = r.create(dir, ev.Name, ev.Fd, "", Reg, ""); err != nil {
				return err
			}
		}
		if ev.Flags&unix.O_TRUNC != 0 {
			return r.add(Op{Kind: OpTruncate, Node: id})
		}
		return nil
	case backing.OpMkdir, backing.OpSymlink, backing.OpMknod, backing.OpWriteFile:
		dir, err := r.node(ev.Dir, "")
		if err != nil {
			return err
		}
		typ := map[backing.Op]NodeType{backing.OpMkdir: Dir, backing.OpSymlink: Link, backing.OpMknod: Other, backing.OpWriteFile: Reg}[ev.Op]
		id, err := r.create(dir, ev.Name, ev.Dir, ev.Name, typ, ev.Target)
		if err != nil || ev.Op != backing.OpWriteFile {
			return err
		}
		if err := r.add(Op{Kind: OpWrite, Node: id, Data: slices.Clone(ev.Data)}); err != nil {
			return err
		}
		return r.add(Op{Kind: OpFsync, Node: id})
	case backing.OpLink, backing.OpUnlink, backing.OpRename:
		return r.entry(ev)
	case backing.OpWrite, backing.OpTruncate, backing.OpPunch, backing.OpSetxattr, backing.OpRemovexattr:
		id, err := r.node(ev.Fd, "")
		if err != nil {
			return err
		}
		kind := map[backing.Op]OpKind{backing.OpWrite: OpWrite, backing.OpTruncate: OpTruncate, backing.OpPunch: OpPunch,
			backing.OpSetxattr: OpSetxattr, backing.OpRemovexattr: OpRemovexattr}[ev.Op]
		return r.add(Op{Kind: kind, Node: id, Data: slices.Clone(ev.Data), Off: ev.Off, Len: ev.Len, Name: ev.Name})
	case backing.OpFsync:
		var id int
		var err error
		if ev.Fd >= 0 {
			id, err = r.node(ev.Fd, "")
		} else {
			id, err = r.node(ev.Dir, ev.Name)
		}
		if err != nil {
			return err
		}
		return r.add(Op{Kind: OpFsync, Node: id})
	}
	return fmt.Errorf("unknown event %d", ev.Op)
}

// entry records a link, unlink or rename.
func (r *Recorder) entry(ev backing.Event) error {
	dir, err := r.node(ev.Dir, "")
	if err != nil {
		return err
	}
	op := Op{Dir: dir, Name: ev.Name, Dir2: -1, Flags: ev.Flags}
	if ev.Op != backing.OpUnlink {
		if op.Dir2, err = r.node(ev.Dir2, ""); err != nil {
			return err
		}
		op.Name2 = ev.Name2
	}
	id, ok := r.live.Nodes[dir].Entries[ev.Name]
	if !ok {
		return fmt.Errorf("%s: entry the model does not have", ev.Name)
	}
	op.Node = id
	switch ev.Op {
	case backing.OpLink:
		op.Kind = OpLink
	case backing.OpUnlink:
		op.Kind = OpUnlink
	default:
		op.Kind = OpRename
	}
	return r.add(op)
}

// create records a new node named dir/name whose backing inode is found by
// fstat of fd (statName "") or fstatat(fd, statName).
func (r *Recorder) create(dir int, name string, fd int, statName string, typ NodeType, target string) (int, error) {
	st, err := backing.Fstatat(fd, statName)
	if err != nil {
		return 0, err
	}
	id := r.next
	r.next++
	r.ids[st.Ino] = id // a reused inode number belongs to the new node
	return id, r.add(Op{Kind: OpCreate, Dir: dir, Name: name, Dir2: -1, Node: id, Type: typ, Target: target})
}

// node returns the model id of the inode fd refers to (name "") or of
// entry name of directory fd.
func (r *Recorder) node(fd int, name string) (int, error) {
	if name == "." {
		name = ""
	}
	st, err := backing.Fstatat(fd, name)
	if err != nil {
		return 0, err
	}
	id, ok := r.ids[st.Ino]
	if !ok {
		return 0, fmt.Errorf("inode %d is not in the model", st.Ino)
	}
	return id, nil
}

// add applies op to the live model and records it with what it builds on.
func (r *Recorder) add(op Op) error {
	i := len(r.ops)
	var deps []int
	dep := func(j int, ok bool) {
		if ok && j >= 0 {
			deps = append(deps, j)
		}
	}
	// Not among them: the creation of the node an op changes or works
	// in. An fsync makes an inode's data or entries durable, not its own
	// name in its parent; an op on a node whose creation is lost is lost
	// with it (the inode is unreachable).
	if op.entryOp() {
		j, ok := r.lastEntry[op.Dir]
		dep(j, ok)
		if op.Dir2 >= 0 {
			j, ok := r.lastEntry[op.Dir2]
			dep(j, ok)
		}
		if op.Kind != OpCreate {
			j, ok := r.origin[entryKey{op.Dir, op.Name}]
			dep(j, ok)
		}
		// Removing a directory, or renaming over one, needs it empty: the
		// ops that emptied it came first.
		if op.Kind == OpUnlink && op.Flags&atRemoveDir != 0 {
			j, ok := r.lastEntry[op.Node]
			dep(j, ok)
		}
		if op.Kind == OpRename {
			if old, ok := r.live.Nodes[op.Dir2].Entries[op.Name2]; ok && r.live.Nodes[old].Type == Dir {
				j, ok := r.lastEntry[old]
				dep(j, ok)
			}
		}
	}
	if !r.live.apply(&op) {
		return fmt.Errorf("op %d (%+v) does not apply to the live model", i, op)
	}
	r.ops = append(r.ops, op)
	r.deps = append(r.deps, deps)
	switch op.Kind {
	case OpCreate:
		r.born[op.Node] = i
		r.origin[entryKey{op.Dir, op.Name}] = i
	case OpLink:
		r.origin[entryKey{op.Dir2, op.Name2}] = i
	case OpRename:
		r.origin[entryKey{op.Dir2, op.Name2}] = i
		if op.Flags&renameExchange != 0 {
			r.origin[entryKey{op.Dir, op.Name}] = i
		}
	}
	if op.entryOp() {
		r.lastEntry[op.Dir] = i
		if op.Dir2 >= 0 {
			r.lastEntry[op.Dir2] = i
		}
	}
	return nil
}
