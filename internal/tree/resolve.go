package tree

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/crypto/names"
	"golang.org/x/sys/unix"
)

// Name lookup (docs/format.md §6.4). Every door into a vault (the FUSE
// mount, the vault package behind cat, ls and export, fsck) finds entries
// through Resolve and lists them through List, so they all see the same
// names: an entry's own encrypted name first, then a sync tool's conflict
// copy, then, when asked for, an undecryptable entry. A displayed name
// belongs to one entry only: a real entry hides an alias shown under the
// same name, and of two aliases with the same displayed name the one with
// the lowest backing name is shown.

// ErrShadowed marks an alias that List leaves out because another entry is
// shown under the same name (a real entry, or an alias with a lower backing
// name). fsck reports it; it is never listed or looked up.
var ErrShadowed = errors.New("tree: conflict copy hidden by another entry of the same name")

// ReadOnly returns ErrReadOnly for an alias (a conflict copy or an
// undecryptable entry): its name is not bound to it by encryption, so it
// is only read, renamed to a name of its own (adopted) or removed, never
// changed in place.
func (n Name) ReadOnly() error {
	if n.Alias() {
		return ErrReadOnly
	}
	return nil
}

// Resolve finds the entry shown as plain in directory d and returns its
// name and its backing lstat: its ordinary encrypted name; else a
// sync-conflict copy "<orig><suffix>" (names.SplitConflict), counting the
// entries made under a conflict copy of d's ID file only when d has a
// place (location binding: DirIDs.Alts); else, if showBad, an
// undecryptable entry shown as "<backing name>.encryptfs-bad-name"
// (BadName). ErrNotFound if none. An invalid plaintext name fails as Name
// does.
func (t *Tree) Resolve(d Dir, plain string, showBad bool) (Name, unix.Stat_t, error) {
	n, err := t.Name(d.id, plain)
	if err != nil {
		return Name{}, unix.Stat_t{}, err
	}
	st, err := backing.Fstatat(d.fd, n.Backing)
	if err == nil {
		return n, st, nil
	}
	if !errors.Is(err, unix.ENOENT) {
		return Name{}, unix.Stat_t{}, err
	}
	return t.ResolveAlias(d, plain, showBad)
}

// MayBeAlias reports, without any system call, whether plain could be the
// name of an alias: callers that try an operation under the ordinary name
// first call ResolveAlias only when that failed with ENOENT and this holds.
func MayBeAlias(plain string, showBad bool) bool {
	if _, _, ok := names.SplitConflict(plain); ok {
		return true
	}
	return showBad && strings.HasSuffix(plain, BadNameSuffix)
}

// ResolveAlias is Resolve without the ordinary name, for callers that
// already found it absent.
func (t *Tree) ResolveAlias(d Dir, plain string, showBad bool) (Name, unix.Stat_t, error) {
	if n, st, ok := t.findConflict(d, plain); ok {
		return n, st, nil
	}
	if showBad {
		if n, st, ok := t.findBad(d, plain); ok {
			return n, st, nil
		}
	}
	return Name{}, unix.Stat_t{}, ErrNotFound
}

// findConflict finds the conflict copy shown as plain. The candidates are
// the original name's backing name with the suffix appended (for a long
// name either form of names.SplitLongForeign), each of which must decrypt
// to plain again (so a long copy needs its original's sidecar, as in
// List), and the entries made under a conflicting directory ID kept with
// that suffix (altdir.go). Of those that exist, the lowest backing name
// wins, as in List, whatever kind it is.
func (t *Tree) findConflict(d Dir, plain string) (Name, unix.Stat_t, bool) {
	orig, suffix, ok := names.SplitConflict(plain)
	if !ok {
		return Name{}, unix.Stat_t{}, false
	}
	on, err := t.Name(d.id, orig)
	if err != nil {
		return Name{}, unix.Stat_t{}, false
	}
	candidates := []string{on.Backing + suffix}
	if on.Long {
		h := strings.TrimPrefix(on.Backing, names.LongNamePrefix)
		candidates = append(candidates, names.LongNamePrefix[:len(names.LongNamePrefix)-1]+suffix+"."+h)
	}
	var found []Name
	for _, b := range candidates {
		if len(b) > names.MaxBackingLen {
			continue
		}
		if n, err := t.DecryptName(d, b); err == nil && n.Plain == plain && n.Orig != "" {
			found = append(found, n)
		}
	}
	found = append(found, t.findAltConflicts(d, orig, suffix)...)
	slices.SortFunc(found, func(a, b Name) int { return strings.Compare(a.Backing, b.Backing) })
	for _, n := range found {
		if st, err := backing.Fstatat(d.fd, n.Backing); err == nil {
			return n, st, true
		}
	}
	return Name{}, unix.Stat_t{}, false
}

// findBad finds the undecryptable entry shown as plain (see BadName). A
// name that decrypts, as an entry or as a conflict copy, is never reached
// this way.
func (t *Tree) findBad(d Dir, plain string) (Name, unix.Stat_t, bool) {
	b, ok := strings.CutSuffix(plain, BadNameSuffix)
	if !ok || b == "" || !IsEntryName(b) {
		return Name{}, unix.Stat_t{}, false
	}
	st, err := backing.Fstatat(d.fd, b)
	if err != nil {
		return Name{}, unix.Stat_t{}, false
	}
	if _, err := t.DecryptName(d, b); err == nil {
		return Name{}, unix.Stat_t{}, false
	}
	return Name{Plain: plain, Backing: b, Bad: true}, st, true
}

// List reads the backing directory d and decrypts every name, conflict
// copies included (those made under a conflict copy of d's ID file only
// when d has a place, with location binding: DirIDs.Alts; else they are
// bad). Reserved names (config, dirid, sidecars) are skipped. Backing
// names that do not decrypt are returned in bad, and so are aliases hidden
// by another entry of the same displayed name (Err wraps ErrShadowed; see
// the rule at the top of this file), so that Resolve finds exactly the
// entries listed.
func (t *Tree) List(d Dir) ([]Entry, []BadEntry, error) {
	ents, err := backing.ReadDir(d.fd)
	if err != nil {
		return nil, nil, err
	}
	out, bad := t.listOf(d, ents)
	return out, bad, nil
}

// listOf is List of directory d listed already (ents).
func (t *Tree) listOf(d Dir, ents []backing.Dirent) ([]Entry, []BadEntry) {
	out := make([]Entry, 0, len(ents))
	var bad []BadEntry
	var aliases []Entry
	alts, _ := t.ids.Alts(d, ents)
	for _, e := range ents {
		if !IsEntryName(e.Name) {
			continue
		}
		n, err := t.DecryptName(d, e.Name)
		if err != nil && len(alts) > 0 {
			// Made under a conflicting directory ID (altdir.go).
			if an, ok := t.DecryptAlt(d, alts, e.Name); ok {
				n, err = an, nil
			}
		}
		switch {
		case err != nil:
			bad = append(bad, BadEntry{Backing: e.Name, Err: err, Ino: e.Ino, Type: e.Type})
		case n.Alias():
			aliases = append(aliases, Entry{Name: n, Ino: e.Ino, Type: e.Type})
		default:
			out = append(out, Entry{Name: n, Ino: e.Ino, Type: e.Type})
		}
	}
	if len(aliases) == 0 {
		return out, bad
	}
	shown := make(map[string]string, len(out)+len(aliases)) // displayed name -> backing name
	for _, e := range out {
		shown[e.Name.Plain] = e.Name.Backing
	}
	slices.SortFunc(aliases, func(a, b Entry) int { return strings.Compare(a.Name.Backing, b.Name.Backing) })
	for _, a := range aliases {
		if by, taken := shown[a.Name.Plain]; taken {
			bad = append(bad, BadEntry{Backing: a.Name.Backing, Ino: a.Ino, Type: a.Type,
				Err: fmt.Errorf("%w: %q is shown for backing entry %q", ErrShadowed, a.Name.Plain, by)})
			continue
		}
		shown[a.Name.Plain] = a.Name.Backing
		out = append(out, a)
	}
	return out, bad
}
