package cli

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/encryptfs/encryptfs/internal/fresh"
	"github.com/encryptfs/encryptfs/internal/session"
	"github.com/encryptfs/encryptfs/vault"
)

// TestFreshnessSyncthing: two devices write one vault kept in step by two
// Syncthing instances (Debian's, on 127.0.0.1). While Syncthing delivers
// one side's changes, freshness status at the other side, polled as fast
// as it runs, must never report a rollback; once in sync it must be OK.
// Both directions, then both sides writing while disconnected.
func TestFreshnessSyncthing(t *testing.T) {
	requireTool(t, "syncthing")
	a, b := newSyncthingPair(t)
	cipher := map[*syncthingNode]string{a: filepath.Join(a.folder, "vault"), b: filepath.Join(b.folder, "vault")}
	state := map[*syncthingNode]string{a: filepath.Join(t.TempDir(), "state-a"), b: filepath.Join(t.TempDir(), "state-b")}
	pf := writePassfile(t, "pw")
	run(t, "", append(append([]string{"init", "--passfile", pf}, cheapKDF...), cipher[a])...).want(t, 0)
	a.start(t)
	b.start(t)
	waitSynced(t, a, b)

	// open is a session of n's copy as n's device (offline: a check).
	open := func(n *syncthingNode, offline bool) *session.Session {
		t.Helper()
		s, err := session.Open(cipher[n], []byte("pw"), session.Options{Freshness: &fresh.Options{StateDir: state[n], Interval: -1, Offline: offline}})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	check := func(n *syncthingNode) *fresh.Report {
		t.Helper()
		s := open(n, true)
		defer s.Close()
		rep, err := s.Freshness().Check()
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	write := func(n *syncthingNode, f func(v *vault.Vault)) {
		t.Helper()
		v, err := vault.FromSession(open(n, false))
		if err != nil {
			t.Fatal(err)
		}
		f(v)
		if err := v.Close(); err != nil {
			t.Fatal(err)
		}
		if rep := check(n); rep.Status != fresh.OK {
			t.Fatalf("%s right after writing: %s", n.name, rep)
		}
	}
	behind := 0
	// watch polls the receivers' status until Syncthing is in sync.
	watch := func(receivers ...*syncthingNode) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			for _, n := range receivers {
				rep := check(n)
				if rep.Status == fresh.RolledBack {
					t.Fatalf("%s: a sync in flight reported as a rollback:\n%s", n.name, rep)
				}
				if rep.Status == fresh.Behind {
					behind++
				}
			}
			if a.connected(t, b) && b.connected(t, a) && a.inSync(t, b) && b.inSync(t, a) && sameNames(t, a.folder, b.folder) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("syncthing did not get in sync within 60 s")
			}
			a.scan(t)
			b.scan(t)
		}
		waitSynced(t, a, b)
		for _, n := range []*syncthingNode{a, b} {
			if rep := check(n); rep.Status != fresh.OK {
				t.Fatalf("%s after the sync: %s", n.name, rep)
			}
		}
	}
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB: takes a while to arrive
	write(a, func(v *vault.Vault) {
		must(t, v.MkdirAll("docs/old", 0o755))
		for i := range 20 {
			must(t, v.WriteFile(fmt.Sprintf("docs/f%02d", i), []byte(fmt.Sprint("file ", i)), 0o644))
		}
		must(t, v.WriteFile("docs/big", big, 0o644))
		must(t, v.WriteFile("docs/old/x", []byte("x"), 0o644))
	})
	watch(b)
	write(b, func(v *vault.Vault) {
		for i := range 10 {
			must(t, v.Remove(fmt.Sprintf("docs/f%02d", i)))
		}
		must(t, v.Rename("docs/f10", "docs/renamed"))
		must(t, v.WriteFile("docs/f11", []byte("changed on b"), 0o644))
		must(t, v.Remove("docs/old/x"))
		must(t, v.Remove("docs/old"))
		must(t, v.WriteFile("docs/big", append(big, big...), 0o644))
	})
	watch(a)

	// Both sides write while disconnected, in different places.
	disconnect(t, a, b)
	write(a, func(v *vault.Vault) {
		must(t, v.Mkdir("from-a", 0o755))
		must(t, v.WriteFile("from-a/new", []byte("a"), 0o644))
		must(t, v.Remove("docs/f12"))
	})
	write(b, func(v *vault.Vault) {
		must(t, v.Mkdir("from-b", 0o755))
		must(t, v.WriteFile("from-b/new", big, 0o644))
		must(t, v.Remove("docs/f13"))
	})
	a.scan(t)
	b.scan(t)
	reconnect(t, a, b)
	watch(a, b)
	t.Logf("%d checks during syncs reported behind", behind)
}
