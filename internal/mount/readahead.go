package mount

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// readaheadREADs is how many READs of the largest size (max_pages, 1 MiB)
// the readahead window spans. With one, the kernel asks for the next
// window only as the reader reaches the current one, so the daemon
// decrypts one READ while the reader waits (during a dd read neither CPU
// was saturated: 66-93% busy, /proc/stat). With two, one READ is answered while the reader
// copies the pages of the other: dd bs=128k of 1000 MiB, 5 interleaved
// rounds, medians, 1 MiB -> 2 MiB window: classic 1316 -> 1471 MiB/s
// (1.12x), io_uring 1151 -> 1399 (1.22x); a 4 MiB window gave 1.14x and
// 1.12x, for twice the pages read ahead of a random mmap fault.
const readaheadREADs = 2

// raiseReadahead sets the mount's readahead window to kb KiB, so that a
// sequential read reaches the daemon as READs of up to 1 MiB (max_pages)
// instead of the kernel's default 128 KiB, readaheadREADs of them ahead.
//
// Why here and not in INIT: the kernel starts a FUSE mount's readahead at
// 128 KiB (VM_READAHEAD_PAGES) and INIT's max_readahead can only lower it
// (fs/fuse/inode.c: process_init_reply takes the minimum). The window is a
// property of the mount's backing device info, writable by root in
// /sys/class/bdi/MAJOR:MINOR/read_ahead_kb once INIT is done (INIT would
// lower an earlier value again). Measured on a 1000 MiB dd bs=128k read
// through the mount: 8000 READs of 128 KiB become about 1000 of 1 MiB,
// which the engine decrypts on several cores (bench/README.md, "Round
// trips").
//
// It fails for a user who may not write sysfs (a mount by a non-root user):
// the mount then keeps the kernel's window, which only costs speed.
func raiseReadahead(mountPoint string, kb int) error {
	var st unix.Stat_t
	if err := unix.Stat(mountPoint, &st); err != nil {
		return err
	}
	path := fmt.Sprintf("/sys/class/bdi/%d:%d/read_ahead_kb", unix.Major(st.Dev), unix.Minor(st.Dev))
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(strconv.Itoa(kb))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
