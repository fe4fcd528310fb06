package cli

import (
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"golang.org/x/term"
)

// ExitInterrupted is the status of a command ended by SIGINT or SIGTERM
// after it cleaned up (128 + SIGINT, as a shell reports it).
const ExitInterrupted = 130

// dirCleanup removes a directory a command made (init's CIPHERDIR,
// export's DESTDIR) when the command fails or is interrupted, so that a
// Ctrl-C or a wrong password leaves nothing behind. A directory that
// existed before is left alone (it was empty and is left so by the
// creation code).
type dirCleanup struct {
	// mu is held while the directory is being written: an interrupt then
	// waits for the write to end before removing.
	mu      sync.Mutex
	dir     string
	created bool
	done    bool
	signals chan os.Signal
}

// removeOnInterrupt starts watching for SIGINT and SIGTERM until stop: one
// that arrives removes dir if created, restores the terminal (a password
// prompt turns echo off) and ends the process with ExitInterrupted.
func (a *App) removeOnInterrupt(dir string, created bool) *dirCleanup {
	c := &dirCleanup{dir: dir, created: created, signals: make(chan os.Signal, 1)}
	var termState *term.State
	if a.stdinIsTerminal() {
		termState, _ = term.GetState(int(a.Stdin.Fd()))
	}
	signal.Notify(c.signals, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		sig, ok := <-c.signals
		if !ok {
			return
		}
		c.mu.Lock() // never released: the process ends here
		if termState != nil {
			_ = term.Restore(int(a.Stdin.Fd()), termState)
		}
		if c.created && !c.done {
			_ = os.RemoveAll(c.dir)
			fmt.Fprintf(a.Stderr, "\nencryptfs: %v: removed %s, which this command had created\n", sig, c.dir)
		} else {
			fmt.Fprintf(a.Stderr, "\nencryptfs: %v: stopped\n", sig)
		}
		os.Exit(ExitInterrupted)
	}()
	return c
}

// fail removes the directory if the command made it, and returns err.
func (c *dirCleanup) fail(err error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.created && !c.done {
		_ = os.RemoveAll(c.dir)
		c.done = true
	}
	return err
}

// stop ends the watch; after a success the directory stays.
func (c *dirCleanup) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.signals == nil {
		return
	}
	c.done = true
	signal.Stop(c.signals)
	close(c.signals)
	c.signals = nil
}
