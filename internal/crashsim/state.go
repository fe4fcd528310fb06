// Package crashsim records the changes a vault makes to its backing store
// and rebuilds every state a crash could leave behind, for tests.
//
// A Recorder is a backing.Observer: passed to a session (session.Options
// .Backing = backing.NewFS(rec)) it sees every mutation and every fsync
// that internal/tree, the vault package and internal/config make in
// CIPHERDIR, in order. Each is turned into an Op on a model of the backing
// file system (State: inodes with data, symlink targets, xattrs and
// directory entries). StateAt(k, keep) rebuilds the state after a crash
// that happened before op k, in which the ops that no barrier had made
// durable by then survive only if keep says so; Materialize writes a State
// into a real directory, where the vault, fsck and the repair can look at
// it with their ordinary code.
//
// The crash model (docs/format.md, "Crash consistency"), deliberately
// weaker than ext4's data=ordered:
//   - each op is atomic: a write, a rename, an unlink either happened as a
//     whole or not at all (a torn chunk write fails authentication, which
//     internal/fileengine's own crash test covers);
//   - fsync of a file makes its earlier data and xattr changes durable;
//     fsync of a directory makes its earlier entry changes (create, link,
//     unlink, rename into or out of it) durable; nothing else is a barrier;
//   - a durable op makes what it builds on durable too (the op that created
//     the entry it renames, the directory it works in, the earlier entry
//     changes of the directories it changes): a journal commits in order;
//   - any other op may be lost, independently of the others, except that
//     an op whose precondition a lost op took away (a rename of an entry
//     whose creation was lost, a write into a file that was never created)
//     is lost with it.
package crashsim

import (
	"fmt"
	"maps"
	"slices"
)

// NodeType is the type of a model inode.
type NodeType uint8

// The node types.
const (
	Reg NodeType = iota + 1
	Dir
	Link
	Other // fifo, socket, device
)

// Node is one inode of the model.
type Node struct {
	Type    NodeType
	Data    []byte            // Reg
	Target  string            // Link
	Entries map[string]int    // Dir: name -> node id
	Xattrs  map[string][]byte // backing xattrs
}

func (n *Node) clone() *Node {
	c := &Node{Type: n.Type, Target: n.Target}
	if n.Data != nil {
		c.Data = slices.Clone(n.Data)
	}
	if n.Entries != nil {
		c.Entries = maps.Clone(n.Entries)
	}
	if n.Xattrs != nil {
		c.Xattrs = maps.Clone(n.Xattrs)
	}
	return c
}

// State is a model backing file system: inodes by id, and the root's id.
type State struct {
	Nodes map[int]*Node
	Root  int
}

// Clone returns a deep copy.
func (s *State) Clone() *State {
	c := &State{Nodes: make(map[int]*Node, len(s.Nodes)), Root: s.Root}
	for id, n := range s.Nodes {
		c.Nodes[id] = n.clone()
	}
	return c
}

// OpKind is the kind of a model Op.
type OpKind uint8

// The model operations. Entry ops change directory Dir (and Dir2); data
// ops change node Node; OpFsync is the only barrier.
const (
	OpCreate      OpKind = iota + 1 // entry Dir/Name -> new node Node of type Type
	OpLink                          // entry Dir2/Name2 -> the node at Dir/Name
	OpUnlink                        // remove entry Dir/Name (Flags: rmdir)
	OpRename                        // Dir/Name -> Dir2/Name2 with rename(2) Flags
	OpWrite                         // Data at Off of Node
	OpTruncate                      // Node's size to Off
	OpPunch                         // zero Len bytes at Off of Node, size kept
	OpSetxattr                      // Node's xattr Name = Data
	OpRemovexattr                   // Node's xattr Name removed
	OpFsync                         // barrier on Node
)

// Op is one recorded change, in model terms.
type Op struct {
	Kind   OpKind
	Dir    int
	Name   string
	Dir2   int
	Name2  string
	Node   int
	Type   NodeType
	Target string
	Data   []byte
	Off    int64
	Len    int64
	Flags  uint
}

// The rename(2) and unlinkat(2) flags the model understands.
const (
	renameNoReplace = 1 << 0 // RENAME_NOREPLACE
	renameExchange  = 1 << 1 // RENAME_EXCHANGE
	atRemoveDir     = 0x200  // AT_REMOVEDIR
)

// entryOp reports whether op changes directory entries.
func (o *Op) entryOp() bool {
	switch o.Kind {
	case OpCreate, OpLink, OpUnlink, OpRename:
		return true
	}
	return false
}

// dir returns directory id's node if it exists and is a directory.
func (s *State) dir(id int) *Node {
	if n := s.Nodes[id]; n != nil && n.Type == Dir {
		return n
	}
	return nil
}

// apply carries op out on s. It returns false, changing nothing, when op's
// precondition does not hold in s (the entry it works on is missing, the
// name it creates is taken, the node it writes was never created): in the
// crash model such an op is lost together with the op it depended on.
func (s *State) apply(op *Op) bool {
	switch op.Kind {
	case OpCreate:
		d := s.dir(op.Dir)
		if d == nil || s.Nodes[op.Node] != nil {
			return false
		}
		if _, taken := d.Entries[op.Name]; taken {
			return false
		}
		n := &Node{Type: op.Type, Target: op.Target}
		if op.Type == Dir {
			n.Entries = map[string]int{}
		}
		s.Nodes[op.Node] = n
		d.Entries[op.Name] = op.Node
	case OpLink:
		d, d2 := s.dir(op.Dir), s.dir(op.Dir2)
		if d == nil || d2 == nil {
			return false
		}
		id, ok := d.Entries[op.Name]
		if _, taken := d2.Entries[op.Name2]; !ok || taken || id != op.Node {
			return false
		}
		d2.Entries[op.Name2] = id
	case OpUnlink:
		d := s.dir(op.Dir)
		if d == nil {
			return false
		}
		id, ok := d.Entries[op.Name]
		if !ok || id != op.Node {
			return false
		}
		if n := s.Nodes[id]; op.Flags&atRemoveDir != 0 && (n.Type != Dir || len(n.Entries) > 0) {
			return false
		}
		delete(d.Entries, op.Name)
	case OpRename:
		return s.rename(op)
	case OpWrite, OpTruncate, OpPunch, OpSetxattr, OpRemovexattr:
		n := s.Nodes[op.Node]
		if n == nil {
			return false
		}
		n.change(op)
	case OpFsync:
	}
	return true
}

// rename carries out a rename op (see apply).
func (s *State) rename(op *Op) bool {
	d, d2 := s.dir(op.Dir), s.dir(op.Dir2)
	if d == nil || d2 == nil {
		return false
	}
	id, ok := d.Entries[op.Name]
	if !ok || id != op.Node {
		return false
	}
	old, exists := d2.Entries[op.Name2]
	switch {
	case op.Flags&renameExchange != 0:
		if !exists {
			return false
		}
		d.Entries[op.Name], d2.Entries[op.Name2] = old, id
		return true
	case exists && op.Flags&renameNoReplace != 0:
		return false
	case exists && old == id:
		return true // two links of one inode: rename(2) does nothing
	case exists:
		on := s.Nodes[old]
		if (on.Type == Dir) != (s.Nodes[id].Type == Dir) || on.Type == Dir && len(on.Entries) > 0 {
			return false
		}
	}
	if s.Nodes[id].Type == Dir && s.inside(op.Dir2, id) {
		return false
	}
	delete(d.Entries, op.Name)
	d2.Entries[op.Name2] = id
	return true
}

// inside reports whether directory id is dir or below it.
func (s *State) inside(id, dir int) bool {
	if id == dir {
		return true
	}
	// Walk down from dir: the model's trees are small.
	var walk func(at int) bool
	walk = func(at int) bool {
		for _, c := range s.Nodes[at].Entries {
			if c == id || s.Nodes[c].Type == Dir && walk(c) {
				return true
			}
		}
		return false
	}
	return walk(dir)
}

// change applies a data op to n.
func (n *Node) change(op *Op) {
	switch op.Kind {
	case OpWrite:
		end := op.Off + int64(len(op.Data))
		if end > int64(len(n.Data)) {
			n.Data = append(n.Data, make([]byte, end-int64(len(n.Data)))...)
		}
		copy(n.Data[op.Off:], op.Data)
	case OpTruncate:
		if op.Off <= int64(len(n.Data)) {
			n.Data = n.Data[:op.Off]
		} else {
			n.Data = append(n.Data, make([]byte, op.Off-int64(len(n.Data)))...)
		}
	case OpPunch:
		end := min(op.Off+op.Len, int64(len(n.Data)))
		if op.Off < end {
			clear(n.Data[op.Off:end])
		}
	case OpSetxattr:
		if n.Xattrs == nil {
			n.Xattrs = map[string][]byte{}
		}
		n.Xattrs[op.Name] = slices.Clone(op.Data)
	case OpRemovexattr:
		delete(n.Xattrs, op.Name)
	}
}

// String describes op for logs.
func (o Op) String() string {
	short := func(s string) string {
		if len(s) > 16 {
			return s[:13] + "..."
		}
		return s
	}
	switch o.Kind {
	case OpCreate:
		return fmt.Sprintf("create %d/%s -> node %d (type %d)", o.Dir, short(o.Name), o.Node, o.Type)
	case OpLink:
		return fmt.Sprintf("link %d/%s -> %d/%s", o.Dir, short(o.Name), o.Dir2, short(o.Name2))
	case OpUnlink:
		return fmt.Sprintf("unlink %d/%s (node %d)", o.Dir, short(o.Name), o.Node)
	case OpRename:
		return fmt.Sprintf("rename %d/%s -> %d/%s (node %d, flags %d)", o.Dir, short(o.Name), o.Dir2, short(o.Name2), o.Node, o.Flags)
	case OpWrite:
		return fmt.Sprintf("write node %d: %d bytes at %d", o.Node, len(o.Data), o.Off)
	case OpTruncate:
		return fmt.Sprintf("truncate node %d to %d", o.Node, o.Off)
	case OpPunch:
		return fmt.Sprintf("punch node %d: %d bytes at %d", o.Node, o.Len, o.Off)
	case OpSetxattr:
		return fmt.Sprintf("setxattr node %d %s", o.Node, short(o.Name))
	case OpRemovexattr:
		return fmt.Sprintf("removexattr node %d %s", o.Node, short(o.Name))
	case OpFsync:
		return fmt.Sprintf("fsync node %d", o.Node)
	}
	return fmt.Sprintf("op %d", o.Kind)
}
