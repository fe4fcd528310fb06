package uring

import (
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestNopRoundTrip submits no-ops and reads their completions back, in
// order and with their user data: the rings are mapped and indexed right.
func TestNopRoundTrip(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	r, err := New(4)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// More rounds than slots: the ring indexes wrap around.
	for round := range 5 {
		var n uint64
		for {
			e := r.NextSQE()
			if e == nil {
				break
			}
			e.SetNop(uint64(round)*100 + n)
			n++
		}
		if n != 4 {
			t.Fatalf("round %d: %d free SQEs, want 4", round, n)
		}
		if err := r.Submit(uint32(n)); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			c, ok := r.PopCQE()
			if !ok {
				t.Fatalf("round %d: completion %d missing", round, i)
			}
			if c.UserData != uint64(round)*100+i || c.Res != 0 {
				t.Fatalf("round %d: completion %d = %+v", round, i, c)
			}
		}
		if _, ok := r.PopCQE(); ok {
			t.Fatal("extra completion")
		}
	}
}

// TestReadOfEventfd: a read of an eventfd stays pending until another
// thread writes to it, and then completes with the counter in the buffer
// (the io_uring transport's wake-up).
func TestReadOfEventfd(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	r, err := New(2)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(efd)
	buf := make([]byte, 8)
	r.NextSQE().SetRead(efd, buf, 42)
	if err := r.Submit(0); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.PopCQE(); ok {
		t.Fatal("the read completed before anything was written")
	}
	go func() {
		time.Sleep(10 * time.Millisecond)
		unix.Write(efd, []byte{3, 0, 0, 0, 0, 0, 0, 0})
	}()
	if err := r.Submit(1); err != nil {
		t.Fatal(err)
	}
	c, ok := r.PopCQE()
	if !ok || c.UserData != 42 || c.Res != 8 {
		t.Fatalf("completion %+v, %v; want user data 42, 8 bytes", c, ok)
	}
	if buf[0] != 3 {
		t.Errorf("read %v, want the counter 3", buf)
	}
	runtime.KeepAlive(buf)
}

// TestSQESetURingCmd checks the byte layout of a URING_CMD entry against
// struct io_uring_sqe.
func TestSQESetURingCmd(t *testing.T) {
	var e SQE
	e.SetURingCmd(7, 2, 0x1122334455667788, 2, 0xabcdef)
	copy(e.Cmd(), []byte{1, 2, 3})
	want := map[int]byte{0: OpURingCmd, 4: 7, 8: 2, 16: 0x88, 17: 0x77, 18: 0x66, 19: 0x55, 20: 0x44, 21: 0x33, 22: 0x22, 23: 0x11, 24: 2, 32: 0xef, 33: 0xcd, 34: 0xab, 48: 1, 49: 2, 50: 3}
	for i, b := range e {
		if b != want[i] {
			t.Errorf("byte %d = %#x, want %#x", i, b, want[i])
		}
	}
}
