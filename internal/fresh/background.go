package fresh

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// batchNice is the CPU priority of the timer's batches (loop).
const batchNice = 10

// background lowers the calling goroutine's thread to nice batchNice for
// good: the timer's batches are background work, and a batch after a
// large change (tar -x of 38k files) opens and reads back every file it
// records, on the CPUs that serve the user's requests. At nice 10 the
// scheduler lets the user's work (the daemon's request threads and its
// client) go first and gives the batch the time they leave idle, which a
// FUSE mount has (the daemon waits on its client, and the client on
// it); measured with tar -x then md5sum -c of 10k files on 2 CPUs, the
// batch's cost to the two fell from 6-11% to 2-5% (docs/performance.md,
// "Freshness batches at a lower priority"). Why 10 and not 19: a thread
// that runs Go code holds one of the runtime's Ps, and a stop-the-world
// of the garbage collector waits for it; at 19 it gets about 1/70 of a
// busy CPU, at 10 about 1/10, so it is never starved long. The thread
// stays locked to the goroutine (not unlocked: the runtime then ends the
// thread with the goroutine, so no other goroutine ever runs at its
// priority). Linux applies nice per thread (setpriority on a TID). A
// failure leaves the priority as it was, which is only slower.
func background() {
	runtime.LockOSThread()
	_ = unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), batchNice)
}
