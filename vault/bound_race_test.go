package vault

import (
	"errors"
	"io/fs"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// TestBoundOpenRacingRename: an open that resolved a name just before a
// rename moved the file away (and dropped the old name's binding) finds
// the file bound elsewhere. That is the rename winning the race, as when
// the name is gone before the open: ENOENT, not a misplaced file (EIO).
// Readers by both names see the contents or ENOENT, nothing else.
func TestBoundOpenRacingRename(t *testing.T) {
	v, _ := newBoundVault(t)
	mustWrite(t, v, "a", "contents")
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		from, to := "a", "b"
		for i := 0; i < 300; i++ {
			if err := v.Rename(from, to); err != nil {
				t.Errorf("rename %s %s: %v", from, to, err)
				break
			}
			from, to = to, from
		}
		close(stop)
	}()
	var bad []error
	var mu sync.Mutex
	for _, name := range []string{"a", "b"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				got, err := v.ReadFile(name)
				if err == nil && string(got) != "contents" {
					err = errors.New("wrong contents " + string(got))
				}
				if err != nil && !errors.Is(err, fs.ErrNotExist) {
					mu.Lock()
					bad = append(bad, err)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if len(bad) > 0 {
		t.Fatalf("%d reads failed, first: %v", len(bad), bad[0])
	}
}

// TestBoundExchangeHardLinks: RENAME_EXCHANGE of two hard links of one
// file changes nothing (both names keep the file), so both bindings stay:
// dropping each name's "old" binding would leave one name misplaced.
func TestBoundExchangeHardLinks(t *testing.T) {
	v, _ := newBoundVault(t)
	mustWrite(t, v, "f", "linked")
	refs := func(a, b string) (entryRef, entryRef) {
		ra, err := v.resolve(a)
		if err != nil {
			t.Fatal(err)
		}
		rb, err := v.resolve(b)
		if err != nil {
			t.Fatal(err)
		}
		return ra, rb
	}
	a, b := refs("f", "g")
	err := a.parent.Link(a.name, b.parent, b.name)
	a.release()
	b.release()
	if err != nil {
		t.Fatal(err)
	}
	a, b = refs("f", "g")
	err = a.parent.Rename(a.name, b.parent, b.name, unix.RENAME_EXCHANGE)
	a.release()
	b.release()
	if err != nil {
		t.Fatal(err)
	}
	mustRead(t, v, "f", "linked")
	mustRead(t, v, "g", "linked")
}
