package cli

import (
	"os"
	"runtime"
)

// waiterServer is a mounted server that says which transport serves it
// and how many of its threads wait in the kernel for requests
// (mount.Server, ReverseServer).
type waiterServer interface {
	Transport() string
	Waiters() int
}

// giveWaitersProcs raises the daemon's GOMAXPROCS by the classic
// transport's waiting threads (daemonProcs). This process is the daemon,
// so it owns its scheduler settings, as it owns its umask.
//
// Only for the classic transport: on io_uring the extra Ps measured no
// less daemon CPU for an untar and cost the sequential READ about a
// tenth (dd of 1000 MiB, 9 reads each: median 1201 MiB/s with the
// default 2 Ps, 1091 with 3, 1051 with 5; docs/performance.md, "A P per
// waiting thread"): a large READ is answered on a goroutine there
// (offloadMin), which an idle P starts at once on another thread.
func giveWaitersProcs(srv waiterServer) {
	if srv.Transport() != "classic" {
		return
	}
	runtime.GOMAXPROCS(daemonProcs(runtime.GOMAXPROCS(0), runtime.NumCPU(), srv.Waiters(), os.Getenv))
}

// daemonProcs is the GOMAXPROCS of a daemon whose transport has waiters
// threads waiting in the kernel for requests (transport.Mount.Waiters),
// from cur, the runtime's setting (its default: one P per CPU it may
// use, fewer under a cgroup CPU limit), and cpus, the CPUs it may use.
//
// Why: each waiting thread is in a system call that holds a P. With as
// many Ps as CPUs and every P held by a waiter (the usual state of a
// daemon between requests: one classic worker per CPU),
// the runtime's monitor thread finds no P idle, so it takes the P from
// each thread that has waited about 20 us and hands it on, polling every
// 20 us to do so; each thread whose request then arrives must win a P
// back through the scheduler (futex wake-ups). strace -c of the daemon
// during a tar -x of 7,972 files (classic, 2 CPUs): 40,602 futex and
// 75,903 nanosleep calls with GOMAXPROCS 2, 5,390 and 28,767 with 4;
// the daemon's CPU over bench/smallfiles.sh's rows 0.90x. With a P
// per waiter on top of the CPUs', an idle P is always there and the
// monitor leaves a wait alone for 10 ms. The extra Ps run nothing while
// their threads wait: Go code still runs on at most as many threads at
// once as there are runnable goroutines, and the kernel schedules those
// threads on the CPUs there are.
//
// A GOMAXPROCS set in the environment is the user's choice and stays.
// Called again (in-process mounts, tests) it gives the same answer:
// the base is the runtime's own setting, not past what the CPUs allow.
func daemonProcs(cur, cpus, waiters int, getenv func(string) string) int {
	if getenv("GOMAXPROCS") != "" || waiters <= 0 {
		return cur
	}
	return max(cur, min(cur, cpus)+waiters)
}
