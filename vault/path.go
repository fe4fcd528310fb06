package vault

import (
	"path"
	"strings"

	"github.com/encryptfs/encryptfs/internal/engine"
	"golang.org/x/sys/unix"
)

// entryRef is the last component of a path: its open parent directory and
// its encrypted name. release gives the parent back (hold).
type entryRef struct {
	parent *engine.Dir
	name   engine.Name
	hold   *heldDir
}

func (r entryRef) release() { r.hold.Close() }

// heldDir is a resolved directory held for one call: an engine.Dir over
// the fd the dirCache keeps (or over one resolved for this call only).
// Close gives it back; it is idempotent, and the Dir is not used after.
type heldDir struct {
	*engine.Dir
	c *dirCache
	e *cachedDir
}

// Close releases the directory's fd to the cache.
func (h *heldDir) Close() error {
	if h.e != nil {
		h.c.release(h.e)
		h.e = nil
	}
	return nil
}

// split cleans p and returns its components ("" and "/" give none).
func split(p string) []string {
	clean := path.Clean("/" + p)
	if clean == "/" {
		return nil
	}
	return strings.Split(clean[1:], "/")
}

// checkOpen returns ErrClosed after Close.
func (v *Vault) checkOpen() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed {
		return ErrClosed
	}
	return nil
}

// openDir finds the directory at components as the mount does: each
// component looked up with engine.Dir.Lookup (conflict copies included,
// undecryptable entries not), opened and its ID read and checked at its
// place, as engine.Dir.Sub does. Symlinks are never followed (the backing
// open refuses them). It starts from the deepest directory on the way
// that the dirCache keeps, and keeps what it resolves beyond.
func (v *Vault) openDir(components []string) (*heldDir, error) {
	if err := v.checkOpen(); err != nil {
		return nil, err
	}
	e, i, gen := v.dirs.live(components)
	if e == nil {
		var err error
		if e, err = v.resolveRoot(); err != nil {
			return nil, err
		}
		v.dirs.add("", e, gen)
	}
	for ; i < len(components); i++ {
		sub, err := v.resolveSub(e, components[i])
		v.dirs.release(e)
		if err != nil {
			return nil, err
		}
		v.dirs.add(dirKey(components[:i+1]), sub, gen)
		e = sub
	}
	return &heldDir{Dir: v.eng.DirAt(e.fd, e.id, e.place), c: v.dirs, e: e}, nil
}

// resolveRoot opens CIPHERDIR and reads (and, with location binding,
// checks) the root's ID, as engine.Vault.Root does.
func (v *Vault) resolveRoot() (*cachedDir, error) {
	fd, err := v.eng.OpenRootFD()
	if err != nil {
		return nil, err
	}
	p := v.eng.RootPlace()
	id, err := v.eng.ReadDirID(fd, p)
	if err != nil {
		engine.CloseFD(fd)
		return nil, err
	}
	return v.dirs.newEntry(fd, id, p), nil
}

// resolveSub finds subdirectory plain of parent, as engine.Dir.Lookup
// and engine.Dir.Sub do: its name looked up, the directory opened beneath
// parent's fd, its ID read and checked at its place.
func (v *Vault) resolveSub(parent *cachedDir, plain string) (*cachedDir, error) {
	d := v.eng.DirAt(parent.fd, parent.id, parent.place)
	n, _, err := d.Lookup(plain, false)
	if err != nil {
		return nil, err
	}
	fd, err := engine.OpenSubdirFD(parent.fd, n.Backing)
	if err != nil {
		return nil, err
	}
	p := d.Place(n)
	id, err := v.eng.ReadDirID(fd, p)
	if err != nil {
		engine.CloseFD(fd)
		return nil, err
	}
	return v.dirs.newEntry(fd, id, p), nil
}

// resolve finds the parent directory and encrypted name of p, which must not
// be the root: the existing entry shown as p's last component
// (engine.Dir.Resolve), or, if there is none, the name a new entry gets. An
// alias found this way is read-only (Name.ReadOnly).
func (v *Vault) resolve(p string) (entryRef, error) {
	comps := split(p)
	if len(comps) == 0 {
		return entryRef{}, unix.EINVAL
	}
	d, err := v.openDir(comps[:len(comps)-1])
	if err != nil {
		return entryRef{}, err
	}
	n, err := d.Resolve(comps[len(comps)-1])
	if err != nil {
		d.Close()
		return entryRef{}, err
	}
	return entryRef{parent: d.Dir, name: n, hold: d}, nil
}
