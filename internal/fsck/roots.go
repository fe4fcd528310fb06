package fsck

import (
	"path"

	"github.com/encryptfs/encryptfs/internal/backing"
	"github.com/encryptfs/encryptfs/internal/core"
	"github.com/encryptfs/encryptfs/internal/crypto/bind"
	"golang.org/x/sys/unix"
)

// KindDirtyRoot is a file with roots (format v2, design §5) whose header
// is DIRTY: written and not closed or fsynced since (a crash), or an
// older header put back. Its chunks read with v1's guarantees only (each
// authentic at its index, but not one version as a whole). Repaired, when
// every chunk reads, by recomputing the tag blocks and the root.
const KindDirtyRoot Kind = "dirty-root"

// fixRecomputeRoot rebuilds a DIRTY file's tag blocks and root.
const fixRecomputeRoot fixAction = 200

// checkRoot reports a DIRTY file; damaged says its contents had a problem
// (bad chunks, a cut): such a file is not repaired, its chunks do not all
// read, and a root would vouch for what is left.
func (w *walker) checkRoot(cf *core.File, ent entry, pl place, damaged bool) {
	if !cf.RootDirty() {
		return
	}
	w.add(Problem{Kind: KindDirtyRoot, CipherPath: pl.cipher, PlainPath: pl.plain,
		Detail: "the file's root is not up to date (written and not closed or fsynced before a crash, or an older header put back): its chunks are checked one by one only"})
	if w.plan && !damaged && ent.place != nil {
		w.addFix(Fix{Kind: KindDirtyRoot, CipherPath: pl.cipher, PlainPath: pl.plain,
			Action: "recompute the file's tag blocks and root from its chunks",
			dir:    path.Dir(pl.cipher), name: ent.backing, action: fixRecomputeRoot, place: *ent.place, ino: ent.st.Ino})
	}
}

// recomputeRoot is fixRecomputeRoot: file name of dirfd, found at p.
func recomputeRoot(eng *core.Engine, dirfd int, name string, p bind.Place) error {
	fd, st, err := backing.OpenRegular(dirfd, name, unix.O_RDWR)
	if err != nil {
		return err
	}
	bf := backing.NewFile(fd, nil)
	defer bf.Close()
	cf, err := eng.OpenAt(bf, p)
	if err != nil {
		return err
	}
	err = cf.RepairRoot()
	if cerr := cf.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	// A repair is no change of the file: keep its times.
	return backing.UtimesNanoAt(dirfd, name, [2]unix.Timespec{st.Atim, st.Mtim})
}
