package upgrade

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/crypto/bind"
	"github.com/encryptfs/encryptfs/internal/crypto/content"
	"github.com/encryptfs/encryptfs/internal/crypto/names"
	"github.com/encryptfs/encryptfs/internal/tree"
	"golang.org/x/sys/unix"
)

// upOp is one file conversion, assigned to the first (in post-order) of
// the directories it changes, so that no directory's conflict copies of
// its ID are converted before the entries they name (see leaveDir).
type upOp struct {
	kind int
	f    *upFile   // the file with the v1 header
	g    *upFile   // opPair: its second name; opRelink: the v2 file to link
	more []*upFile // opLinks: its other names (two or more)
}

const (
	opConvert = iota // one name: a new v2 header bound to it
	opPair           // two hard-linked names: bound to both, linked again
	opLinks          // three names or more: bound in a links file, linked again
	opRelink         // a crash split the names: link the v2 file over a v1 name
)

// plan assigns every v1 file to an op, or records why it cannot be
// converted: a hard link the scan did not find (a name outside the
// vault, or one that does not decrypt) would keep the old header, and
// its binding could not be computed (its place is unknown).
func (u *upgrader) plan() {
	type inode struct{ dev, ino uint64 }
	groups := map[inode][]*upFile{}
	var order []inode
	for _, f := range u.files {
		k := inode{f.st.Dev, f.st.Ino}
		if groups[k] == nil {
			order = append(order, k)
		}
		groups[k] = append(groups[k], f)
	}
	for _, k := range order {
		g := groups[k]
		f := g[0]
		switch nlink := f.st.Nlink; {
		case int(nlink) != len(g):
			u.problem("%s: has another hard link that the upgrade cannot see (outside the vault, or an entry whose name does not decrypt)", f.plain)
		case len(g) > bind.MaxLinks:
			u.problem("%s: %d hard links; a bound vault allows at most %d", f.plain, nlink, bind.MaxLinks)
		default:
			if src := u.convertedAs(f); src != nil {
				// An interrupted run converted some of the names:
				// the v2 file is bound to all of them.
				for _, h := range g {
					u.assign(upOp{kind: opRelink, f: h, g: src})
				}
				continue
			}
			switch nlink {
			case 1:
				u.assign(upOp{kind: opConvert, f: f})
			case 2:
				u.assign(upOp{kind: opPair, f: g[0], g: g[1]})
			default:
				u.assign(upOp{kind: opLinks, f: g[0], more: g[1:]})
			}
		}
	}
}

// convertedAs returns the v2 file an interrupted run made of v1 file f
// (same file ID, bound to f's place: by its header or its links file),
// or nil. Only a run that converted f's other names leaves one: the v2
// copy was renamed over one name and linked over some more before the
// crash.
func (u *upgrader) convertedAs(f *upFile) *upFile {
	for _, src := range u.v2[f.hdr.FileID] {
		if u.b.Binder().Match(bind.KindFile, f.hdr.FileID[:], f.place, src.slots) {
			return src
		}
	}
	return nil
}

// assign gives op to the first in post-order of the directories it
// changes (all of an opLinks's names' too): see upOp.
func (u *upgrader) assign(op upOp) {
	d := op.f.dir
	for _, g := range append([]*upFile{op.g}, op.more...) {
		if g != nil && g.dir.post < d.post {
			d = g.dir
		}
	}
	d.ops = append(d.ops, op)
}

// convert does what the scan found, directory by directory in post-order.
func (u *upgrader) convert(progress func(Progress)) error {
	var pr Progress
	for _, d := range u.dirs {
		pr.TotalObjects += int64(len(d.ops) + len(d.alts))
		if !d.v2 {
			pr.TotalObjects++
		}
		for _, op := range d.ops {
			if op.kind != opRelink {
				pr.TotalBytes += op.f.st.Size
			}
		}
	}
	report := func() {
		if progress != nil {
			progress(pr)
		}
	}
	report()
	for _, t := range u.temps {
		if err := u.inDir(t.dir, func(fd int) error { return u.v1.Backing().Unlinkat(fd, t.name, 0) }); err != nil && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("session: upgrade: remove a leftover temporary: %w", err)
		}
	}
	for _, d := range u.dirs {
		if err := u.inDir(d, func(fd int) error { return u.convertDir(fd, d, &pr, report) }); err != nil {
			return err
		}
	}
	return nil
}

// inDir runs fn on directory d, opened from the root.
func (u *upgrader) inDir(d *upDir, fn func(fd int) error) error {
	fd, err := backing.OpenDir(u.rootfd, d.rel)
	if err != nil {
		return fmt.Errorf("session: upgrade: %s: %w", d.plain, err)
	}
	defer backing.Close(fd)
	return fn(fd)
}

// convertDir runs d's ops, then converts its conflict copies of its ID and
// its own ID file, and makes it all durable (fsync of d; an op that
// changed another directory fsynced that one itself).
func (u *upgrader) convertDir(fd int, d *upDir, pr *Progress, report func()) error {
	changed := false
	for _, op := range d.ops {
		if err := u.runOp(fd, d, op); err != nil {
			return fmt.Errorf("session: upgrade: %s: %w", op.f.plain, err)
		}
		changed = true
		pr.Objects++
		if op.kind != opRelink {
			pr.Bytes += op.f.st.Size
		}
		report()
	}
	for _, a := range d.alts {
		id, err := backing.ReadFileAt(fd, a, tree.DirIDFileSizeV1)
		if err == nil && len(id) != tree.DirIDFileSizeV1 {
			err = fmt.Errorf("%d bytes", len(id))
		}
		if err == nil {
			err = u.replaceSmall(fd, a, u.b.Tree().DirIDs().FileAt(id, d.place))
		}
		if err != nil {
			return fmt.Errorf("session: upgrade: %s: conflict copy %s of the directory ID: %w", d.plain, a, err)
		}
		changed = true
		pr.Objects++
		u.doneDirs++
		report()
	}
	if !d.v2 {
		if err := u.replaceSmall(fd, names.DirIDFile, u.b.Tree().DirIDs().FileAt(d.id, d.place)); err != nil {
			return fmt.Errorf("session: upgrade: %s: directory ID: %w", d.plain, err)
		}
		changed = true
		pr.Objects++
		u.doneDirs++
		report()
	}
	if !changed {
		return nil
	}
	return u.v1.Backing().Fsync(fd)
}

// runOp runs one file op; fd is directory d, to which op is assigned.
func (u *upgrader) runOp(fd int, d *upDir, op upOp) error {
	// fdOf opens the directory of f, unless it is d.
	withDir := func(f *upFile, fn func(int) error) error {
		if f.dir == d {
			return fn(fd)
		}
		return u.inDir(f.dir, func(ofd int) error {
			if err := fn(ofd); err != nil {
				return err
			}
			return u.v1.Backing().Fsync(ofd)
		})
	}
	switch op.kind {
	case opConvert:
		u.doneFiles++
		return withDir(op.f, func(ffd int) error { return u.convertFile(ffd, op.f, 0, op.f.place) })
	case opPair:
		u.doneFiles++
		return withDir(op.f, func(ffd int) error {
			if err := u.convertFile(ffd, op.f, 0, op.f.place, op.g.place); err != nil {
				return err
			}
			return withDir(op.g, func(gfd int) error { return u.relink(ffd, op.f.name, gfd, op.g.name) })
		})
	case opLinks:
		u.doneFiles++
		return withDir(op.f, func(ffd int) error {
			// A v2 file's links file binds its names already.
			if !op.f.fromV2 {
				if err := u.writeLinks(op); err != nil {
					return err
				}
			}
			if err := u.convertFile(ffd, op.f, content.FlagLinks); err != nil {
				return err
			}
			for _, g := range op.more {
				if err := withDir(g, func(gfd int) error { return u.relink(ffd, op.f.name, gfd, g.name) }); err != nil {
					return err
				}
			}
			return nil
		})
	default:
		u.relinked++
		return withDir(op.g, func(gfd int) error {
			return withDir(op.f, func(ffd int) error { return u.relink(gfd, op.g.name, ffd, op.f.name) })
		})
	}
}

// tempName is a fresh name in the upgrade's temp namespace.
func (u *upgrader) tempName() (string, error) {
	var b [12]byte
	if _, err := io.ReadFull(u.v1.Rand(), b[:]); err != nil {
		return "", err
	}
	return upgradeTempPrefix + hex.EncodeToString(b[:]), nil
}

// replaceSmall replaces dirfd's small file name (a dirid) by data: a
// temporary written and fsynced, renamed over it
// (backing.FS.ReplaceFile). The caller fsyncs dirfd.
func (u *upgrader) replaceSmall(dirfd int, name string, data []byte) error {
	tmp, err := u.tempName()
	if err != nil {
		return err
	}
	return u.v1.Backing().ReplaceFile(dirfd, tmp, dirfd, name, data, 0o400, 0)
}

// relink makes dst (in dstfd) a hard link of src (in srcfd): linked under
// a temporary name, renamed over dst. The caller fsyncs dstfd.
func (u *upgrader) relink(srcfd int, src string, dstfd int, dst string) error {
	tmp, err := u.tempName()
	if err != nil {
		return err
	}
	if err := u.v1.Backing().Linkat(srcfd, src, dstfd, tmp); err != nil {
		return err
	}
	if err := u.v1.Backing().Renameat2(dstfd, tmp, dstfd, dst, 0); err != nil {
		u.v1.Backing().Unlinkat(dstfd, tmp, 0)
		return err
	}
	return nil
}

// writeLinks makes op's links file durable before any of its file's
// names changes (docs/format.md §14, links rule 1): the bindings of all
// its names, written under the upgrade's temp prefix in the root,
// fsynced, renamed over, and the root fsynced. A crash before the first
// name's header is replaced leaves a links file no header asks for; the
// resumed run, which still finds every name v1, writes it again. Its gen
// carries on an earlier one's (such a leftover), so that gens only grow.
func (u *upgrader) writeLinks(op upOp) error {
	id := op.f.hdr.FileID
	l := bind.LinkList{FileID: id, Gen: 1}
	if old, err := u.b.Tree().Links().LoadAt(u.rootfd, id[:]); err == nil {
		l.Gen = old.Gen + 1
	}
	for _, f := range append([]*upFile{op.f}, op.more...) {
		l.Bindings = append(l.Bindings, u.b.Binder().Sum(bind.KindFile, id[:], f.place))
	}
	if err := u.replaceSmall(u.rootfd, bind.LinksName(id[:]), u.b.Binder().SealLinks(l)); err != nil {
		return fmt.Errorf("links file: %w", err)
	}
	return u.v1.Backing().Fsync(u.rootfd)
}

// convertFile replaces file f (in dirfd) by a copy in the roots layout
// (docs/format.md §16): a v2 header bound to places (flags added to f's:
// content.FlagLinks, with no places, for a file bound in its links file),
// or, for f already v2 without roots (f.fromV2), bound as its header is,
// with its size, gen 1 and its root; f's chunks copied byte for byte to
// their roots offsets and their tag blocks (copyRoots). Why the chunks
// need no change: each is sealed under the file's key (from its file ID)
// with its index and final flag as associated data, never its offset
// (docs/format.md §5); the new header keeps the file ID. Mode, owner,
// times and the backing xattrs (the file's encrypted xattrs) are copied.
func (u *upgrader) convertFile(dirfd int, f *upFile, flags uint16, places ...bind.Place) error {
	srcfd, st, err := backing.OpenRegular(dirfd, f.name, unix.O_RDONLY)
	if err != nil {
		return err
	}
	defer backing.Close(srcfd)
	if st.Dev != f.st.Dev || st.Ino != f.st.Ino {
		return fmt.Errorf("the file changed during the upgrade")
	}
	// The epoch stays (a v1 header's is 0): the chunks are sealed under
	// that epoch's file key, and the new header's MAC is of that epoch.
	h := content.Header{Flags: (f.hdr.Flags | flags) &^ content.FlagSparse, FileID: f.hdr.FileID, Epoch: f.hdr.Epoch}
	if f.fromV2 {
		h.Bindings = f.hdr.Bindings
	} else {
		for i, p := range places {
			h.Bindings[i] = u.b.Binder().Sum(bind.KindFile, h.FileID[:], p)
		}
	}
	return u.replaceWith(dirfd, f.name, srcfd, st, func(out *backing.ObservedFile) error {
		return u.copyRoots(out, srcfd, f, h, st.Size)
	})
}

// replaceWith replaces file name of dirfd (open as srcfd, with stat st)
// by what fill writes: into a temporary beside it, given the original's
// owner, mode, xattrs and times, fsynced and renamed over name. The
// caller fsyncs dirfd.
func (u *upgrader) replaceWith(dirfd int, name string, srcfd int, st unix.Stat_t, fill func(out *backing.ObservedFile) error) error {
	tmp, err := u.tempName()
	if err != nil {
		return err
	}
	fd, err := u.v1.Backing().Openat(dirfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	out := u.v1.Backing().NewFile(fd, nil)
	err = fill(out)
	if err == nil {
		err = u.copyMeta(out, srcfd, st)
	}
	if err == nil {
		// Times last (the writes above set them), before the fsync;
		// best effort: the contents are what matters.
		backing.UtimesNanoAt(dirfd, tmp, [2]unix.Timespec{st.Atim, st.Mtim})
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = u.v1.Backing().Renameat2(dirfd, tmp, dirfd, name, 0)
	}
	if err != nil {
		u.v1.Backing().Unlinkat(dirfd, tmp, 0)
	}
	return err
}

// copyMeta gives out src's owner, mode and xattrs.
func (u *upgrader) copyMeta(out *backing.ObservedFile, srcfd int, st unix.Stat_t) error {
	if err := u.copyXattrs(out, srcfd); err != nil {
		return err
	}
	ofd := int(out.Fd())
	unix.Fchown(ofd, int(st.Uid), int(st.Gid)) // only root may; anyone else owns both already
	return unix.Fchmod(ofd, st.Mode&0o7777)
}

// copyXattrs copies src's backing xattrs (the file's encrypted user
// xattrs, and any other the backing file system shows) to out. Those
// outside user.* that cannot be set (security.*, trusted.* without the
// privilege) are left out.
func (u *upgrader) copyXattrs(out *backing.ObservedFile, srcfd int) error {
	list, err := backing.Flistxattr(srcfd)
	if err != nil {
		if errors.Is(err, unix.ENOTSUP) {
			return nil
		}
		return err
	}
	for _, name := range list {
		v, err := backing.Fgetxattr(srcfd, name)
		if err == nil {
			err = u.v1.Backing().Fsetxattr(int(out.Fd()), name, v, 0)
		}
		if err != nil && strings.HasPrefix(name, "user.") {
			return fmt.Errorf("xattr %s: %w", name, err)
		}
	}
	return nil
}
