package crashsim

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// snapshot reads the tree at dir into a State, with the backing inode
// number of each node. Only user.* xattrs are read (the vault's own).
func snapshot(dir string) (*State, map[uint64]int, error) {
	s := &State{Nodes: map[int]*Node{}}
	ids := map[uint64]int{}
	var walk func(path string) (int, error)
	walk = func(path string) (int, error) {
		var st unix.Stat_t
		if err := unix.Lstat(path, &st); err != nil {
			return 0, err
		}
		if id, ok := ids[st.Ino]; ok {
			return id, nil // another link of a node already read
		}
		id := len(s.Nodes)
		ids[st.Ino] = id
		n := &Node{}
		s.Nodes[id] = n
		var err error
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG:
			n.Type = Reg
			n.Data, err = os.ReadFile(path)
		case unix.S_IFLNK:
			n.Type = Link
			n.Target, err = os.Readlink(path)
		case unix.S_IFDIR:
			n.Type = Dir
			n.Entries = map[string]int{}
			var ents []os.DirEntry
			if ents, err = os.ReadDir(path); err == nil {
				for _, e := range ents {
					c, err := walk(filepath.Join(path, e.Name()))
					if err != nil {
						return 0, err
					}
					n.Entries[e.Name()] = c
				}
			}
		default:
			n.Type = Other
		}
		if err != nil {
			return 0, err
		}
		if n.Type != Link {
			if n.Xattrs, err = readXattrs(path); err != nil {
				return 0, err
			}
		}
		return id, nil
	}
	root, err := walk(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("crashsim: snapshot: %w", err)
	}
	s.Root = root
	return s, ids, nil
}

func readXattrs(path string) (map[string][]byte, error) {
	buf := make([]byte, 64<<10)
	n, err := unix.Llistxattr(path, buf)
	if err != nil {
		return nil, err
	}
	var out map[string][]byte
	for _, name := range strings.Split(string(buf[:n]), "\x00") {
		if !strings.HasPrefix(name, "user.") {
			continue
		}
		v := make([]byte, 64<<10)
		m, err := unix.Lgetxattr(path, name, v)
		if err != nil {
			return nil, err
		}
		if out == nil {
			out = map[string][]byte{}
		}
		out[name] = v[:m]
	}
	return out, nil
}

// Snapshot reads the tree at dir as a State (for comparing a recording
// with the disk it was made on).
func Snapshot(dir string) (*State, error) {
	s, _, err := snapshot(dir)
	return s, err
}

// Materialize writes the tree of s into dir, which must exist and be empty:
// files 0600, directories 0700, hard links as links, user xattrs.
func (s *State) Materialize(dir string) error {
	made := map[int]string{}
	var write func(id int, path string) error
	write = func(id int, path string) error {
		n := s.Nodes[id]
		if first, ok := made[id]; ok && n.Type != Dir {
			return os.Link(first, path)
		}
		made[id] = path
		var err error
		switch n.Type {
		case Reg:
			err = os.WriteFile(path, n.Data, 0o600)
		case Link:
			err = os.Symlink(n.Target, path)
		case Other:
			err = unix.Mkfifo(path, 0o600)
		case Dir:
			if path != dir {
				err = os.Mkdir(path, 0o700)
			}
			for _, name := range slices.Sorted(maps.Keys(n.Entries)) {
				if err == nil {
					err = write(n.Entries[name], filepath.Join(path, name))
				}
			}
		}
		for name, v := range n.Xattrs {
			if err == nil {
				err = unix.Lsetxattr(path, name, v, 0)
			}
		}
		return err
	}
	if err := write(s.Root, dir); err != nil {
		return fmt.Errorf("crashsim: materialize: %w", err)
	}
	return nil
}

// Diff describes the first difference between the trees of a and b (node
// ids aside), or returns "" if they are the same.
func Diff(a, b *State) string {
	var diff func(x, y int, path string) string
	diff = func(x, y int, path string) string {
		nx, ny := a.Nodes[x], b.Nodes[y]
		switch {
		case nx.Type != ny.Type:
			return fmt.Sprintf("%s: type %d != %d", path, nx.Type, ny.Type)
		case !bytes.Equal(nx.Data, ny.Data):
			return fmt.Sprintf("%s: %d data bytes != %d", path, len(nx.Data), len(ny.Data))
		case nx.Target != ny.Target:
			return fmt.Sprintf("%s: target %q != %q", path, nx.Target, ny.Target)
		case !maps.EqualFunc(nx.Xattrs, ny.Xattrs, bytes.Equal):
			return fmt.Sprintf("%s: xattrs differ", path)
		}
		kx, ky := slices.Sorted(maps.Keys(nx.Entries)), slices.Sorted(maps.Keys(ny.Entries))
		if !slices.Equal(kx, ky) {
			return fmt.Sprintf("%s: entries %v != %v", path, kx, ky)
		}
		for _, k := range kx {
			if d := diff(nx.Entries[k], ny.Entries[k], path+"/"+k); d != "" {
				return d
			}
		}
		return ""
	}
	return diff(a.Root, b.Root, ".")
}
