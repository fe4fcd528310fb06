package transport

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Yielding waits: where the caller's next request goes.
//
// The kernel queues a request on the ring of the CPU its caller runs on,
// and that ring's thread, pinned there, answers it: the caller sleeps, the
// thread runs on the same CPU. The reply wakes the caller while the thread
// still runs there, so the scheduler puts the caller on another, idle CPU
// (a plain wakeup counts the waker as busy), and the caller's next request
// goes to that CPU's ring. On 2 CPUs a tar -x thus moved at every request
// (130,000 CPU migrations against 2,300 on the classic transport), waking
// an idle CPU each time, and io_uring ran untar 1.2x slower than classic
// on the VM of 2026-11-28 (docs/performance.md, "Transports").
//
// So a ring thread makes its wait, the one system call that commits a
// reply and sleeps for the next request, as SCHED_IDLE, and is SCHED_OTHER
// again as soon as it returns. A CPU that runs only SCHED_IDLE tasks
// counts as idle when the scheduler places a waking task (kernel/sched:
// sched_idle_cpu), so the caller stays on its CPU, preempts the thread
// (which has only its sleep left to do), and its next request is this
// ring's again: the caller and its ring's thread take turns on one CPU,
// as with the caller pinned.
//
// What that costs: a thread woken while SCHED_IDLE runs only when nothing
// else on its CPU wants to; with a CPU hog beside the caller, a request
// measured up to 317 ms. The watchdog below bounds that: while requests
// flow it looks at each queue every tick, and a ring thread that is
// runnable (not asleep) in the same idle wait as a tick ago, or whose
// state cannot be read, is made SCHED_OTHER at once and waits as
// SCHED_OTHER for backoff, so with a hog a request waits at most about
// two ticks, once per backoff.
// When no ring has served for quietTicks the watchdog sleeps, and while
// it sleeps every wait is a SCHED_OTHER one: a wait is SCHED_IDLE only
// while someone watches it.
//
// Leaving SCHED_IDLE needs CAP_SYS_NICE or an RLIMIT_NICE that allows
// nice 0 (sched(7)); without them a thread could not come back, and the
// waits stay SCHED_OTHER (mayYield).
const (
	yieldTick  = time.Millisecond
	quietTicks = 20
	backoff    = 100 * time.Millisecond
)

// yielder is a mount's watchdog over its queues' yielding waits.
type yielder struct {
	queues []*queue
	asleep atomic.Bool   // the watchdog sleeps: waits are SCHED_OTHER
	kick   chan struct{} // wakes the watchdog (buffered 1)
	stop   chan struct{}
	stops  sync.Once
	done   sync.WaitGroup
	boosts atomic.Uint64 // ring threads made SCHED_OTHER by the watchdog
}

// queueYield is a queue's side of the yielder.
type queueYield struct {
	tid      atomic.Int32  // the ring thread (0 until it runs)
	waits    atomic.Uint64 // waits begun, yielding or not
	idle     atomic.Bool   // in a yielding wait
	idleTill atomic.Int64  // no yielding wait before this (unix ns)
	yielded  atomic.Uint64 // yielding waits done
}

// schedOther is SCHED_OTHER's number, which x/sys/unix does not name.
const schedOther = 0

// setPolicy sets thread tid's scheduling policy (nice 0); 0 is the
// calling thread. sched_setattr writes into its argument: one each.
func setPolicy(tid int, policy uint32) error {
	attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: policy}
	return unix.SchedSetAttr(tid, &attr, 0)
}

// mayYield reports whether a thread of this process may go SCHED_IDLE and
// come back to SCHED_OTHER at nice 0.
func mayYield() bool {
	var rl unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NICE, &rl) == nil && rl.Cur >= 20 {
		return true
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if unix.Capget(&hdr, &data[0]) != nil {
		return false
	}
	return data[unix.CAP_SYS_NICE/32].Effective&(1<<(unix.CAP_SYS_NICE%32)) != 0
}

// newYielder makes the watchdog for a mount's queues; nil when waits may
// not yield. Each queue gets it before its thread starts, and start
// starts it once every queue runs.
func newYielder() *yielder {
	if !mayYield() {
		return nil
	}
	y := &yielder{kick: make(chan struct{}, 1), stop: make(chan struct{})}
	y.asleep.Store(true) // until a wait wakes it
	return y
}

// start starts the watchdog over qs.
func (y *yielder) start(qs []*queue) {
	y.queues = qs
	y.done.Add(1)
	go y.watch()
}

// wait is the ring thread's commit-and-wait (ring.Submit(1) in serve):
// yielding unless the watchdog sleeps or the queue backs off.
func (q *queue) wait(submit func() error) error {
	y := q.yield
	if y == nil {
		return submit()
	}
	qy := &q.yieldState
	qy.waits.Add(1)
	if y.asleep.Load() {
		y.wake()
		return submit()
	}
	if time.Now().UnixNano() < qy.idleTill.Load() {
		return submit()
	}
	qy.idle.Store(true)
	if err := setPolicy(0, unix.SCHED_IDLE); err != nil {
		qy.idle.Store(false)
		q.stopYielding("cannot wait at SCHED_IDLE", err)
		return submit()
	}
	// The watchdog went to sleep meanwhile: it may have looked at idle
	// before it was set, so nothing would end this wait's SCHED_IDLE.
	if y.asleep.Load() {
		q.leaveIdle()
	}
	err := submit()
	qy.idle.Store(false)
	q.leaveIdle()
	qy.yielded.Add(1)
	return err
}

// leaveIdle makes the calling ring thread SCHED_OTHER again; if it cannot
// (mayYield said it could), its waits yield no more.
func (q *queue) leaveIdle() {
	if err := setPolicy(0, schedOther); err != nil {
		q.stopYielding("cannot leave SCHED_IDLE", err)
	}
}

// stopYielding turns q's yielding waits off for good, and says why once.
func (q *queue) stopYielding(what string, err error) {
	if q.yieldState.idleTill.Swap(math.MaxInt64) != math.MaxInt64 {
		q.logf("io_uring queue %d: %s (%v): its waits no longer yield", q.qid, what, err)
	}
}

// wake wakes the watchdog if it sleeps.
func (y *yielder) wake() {
	if y.asleep.CompareAndSwap(true, false) {
		select {
		case y.kick <- struct{}{}:
		default:
		}
	}
}

// close stops the watchdog; again, it does nothing.
func (y *yielder) close() {
	y.stops.Do(func() { close(y.stop) })
	y.done.Wait()
}

// watch is the watchdog: see the comment at the top.
func (y *yielder) watch() {
	defer y.done.Done()
	seen := make([]uint64, len(y.queues))
	stats := make([]*os.File, len(y.queues))
	defer func() {
		for _, f := range stats {
			if f != nil {
				f.Close()
			}
		}
	}()
	t := time.NewTicker(yieldTick)
	defer t.Stop()
	quiet := 0
	for {
		if y.asleep.Load() {
			t.Stop()
			select {
			case <-y.stop:
				return
			case <-y.kick:
			}
			quiet = 0
			t.Reset(yieldTick)
		}
		select {
		case <-y.stop:
			return
		case <-t.C:
		}
		busy := false
		for i, q := range y.queues {
			qy := &q.yieldState
			n := qy.waits.Load()
			if n != seen[i] {
				seen[i], busy = n, true
				continue
			}
			if !qy.idle.Load() {
				continue
			}
			if stats[i] == nil {
				stats[i] = openTaskStat(qy.tid.Load())
			}
			// A thread whose state cannot be read (no /proc) is taken
			// as starved: the guard must not go blind.
			if stats[i] == nil || runnable(stats[i]) {
				y.boost(q)
			}
		}
		if busy {
			quiet = 0
			continue
		}
		if quiet++; quiet >= quietTicks {
			y.asleep.Store(true)
			// A wait that saw the watchdog awake may be SCHED_IDLE now;
			// one that starts from here on sees it asleep (wait).
			for _, q := range y.queues {
				if q.yieldState.idle.Load() {
					setOther(q.yieldState.tid.Load())
				}
			}
		}
	}
}

// boost makes q's ring thread SCHED_OTHER now and for backoff.
func (y *yielder) boost(q *queue) {
	till := &q.yieldState.idleTill
	if t := till.Load(); t != math.MaxInt64 { // not off for good
		till.CompareAndSwap(t, time.Now().Add(backoff).UnixNano())
	}
	setOther(q.yieldState.tid.Load())
	y.boosts.Add(1)
}

// setOther makes thread tid SCHED_OTHER (0: no thread yet).
func setOther(tid int32) {
	if tid != 0 {
		setPolicy(int(tid), schedOther)
	}
}

// openTaskStat opens /proc/self/task/TID/stat of this process's thread
// tid (nil if it cannot be).
func openTaskStat(tid int32) *os.File {
	if tid == 0 {
		return nil
	}
	f, err := os.Open(fmt.Sprintf("/proc/self/task/%d/stat", tid))
	if err != nil {
		return nil
	}
	return f
}

// runnable reports whether the thread whose stat f is is in state R
// (running or waiting for a CPU). Its state is the field after the
// command name, which ends at the last ')'.
func runnable(f *os.File) bool {
	if f == nil {
		return false
	}
	var b [512]byte
	n, _ := f.ReadAt(b[:], 0)
	s := b[:n]
	i := bytes.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] == 'R'
}
