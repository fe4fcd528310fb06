package fresh

import "time"

// Timer batches wait for a quiet moment. A batch opens and reads back the
// names it records and writes manifests: after tar -x of the kernel
// subset (38k files) it costs about 0.23 s of CPU. Run while the user's
// requests flow, it takes that time from them even at nice 10
// (background.go): the batch that fired during md5sum -c right after the
// untar made it about 0.4 s slower, most of what format 2 cost that row
// (docs/performance.md, "What a batch costs the row it runs during").
// So when its timer fires, the loop first waits until the engine has
// made no request for Options.Quiet (a lookup, listing, open, read or
// write: engine.Vault.Activity), polled at that period, and batches
// then: in the pause between two commands, or while an editor waits on
// its user. Under load that never pauses it waits at most
// Options.MaxDelay, so every change is still recorded within Interval +
// MaxDelay of being made (30 s by default, against 5 s before).
//
// What the longer window costs: a change is kept in memory, noted,
// until its batch, as before. Unmount, Flush and a crash are unchanged:
// Close batches at once, and a crashed mount leaves its state dirty, so
// the next mount records the whole tree (docs/format.md §15). Rollback
// detection by another device, or after a crash, covers what was
// recorded: a change made under constant load is covered up to MaxDelay
// later than it would have been.

// DefaultQuiet is Options.Quiet's default: much longer than the gap
// between two requests of one command (tens of microseconds, or a few
// milliseconds between the commands of a script), much shorter than the
// pauses of interactive use.
const DefaultQuiet = 50 * time.Millisecond

// DefaultMaxDelay is Options.MaxDelay's default.
const DefaultMaxDelay = 25 * time.Second

// awaitQuiet waits until the engine's activity count stood still for
// one Options.Quiet period, or for Options.MaxDelay at most. It reports
// false if Close stopped the loop meanwhile.
func (v *Vault) awaitQuiet() bool {
	activity := v.r.Activity
	if activity == nil || v.o.Quiet < 0 {
		return true
	}
	poll := time.NewTicker(v.o.Quiet)
	defer poll.Stop()
	deadline := time.NewTimer(v.o.MaxDelay)
	defer deadline.Stop()
	last := activity()
	for {
		select {
		case <-v.stop:
			return false
		case <-deadline.C:
			return true
		case <-poll.C:
			now := activity()
			if now == last {
				return true
			}
			last = now
		}
	}
}
