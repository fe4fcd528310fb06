package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// syncthingNode is one Syncthing instance of a test: its home, the folder
// it syncs, its device ID and its REST API (on 127.0.0.1).
type syncthingNode struct {
	name, home, folder, id string
	api                    string // http://127.0.0.1:PORT
	listen                 int    // its sync protocol port on 127.0.0.1
	d                      *daemon
}

// stAPIKey is the REST API key of every test instance (it listens on
// 127.0.0.1 only and lives as long as the test).
const stAPIKey = "encryptfs-test-api-key"

// stFolderID is the ID of the one folder the instances share.
const stFolderID = "vault"

var deviceIDRe = regexp.MustCompile(`Device ID: ([A-Z0-9-]{63})`)

// newSyncthingNode generates the keys of an instance.
func newSyncthingNode(t *testing.T, name string) *syncthingNode {
	t.Helper()
	n := &syncthingNode{name: name, home: t.TempDir(), folder: t.TempDir(), listen: freePort(t)}
	n.api = "http://127.0.0.1:" + strconv.Itoa(freePort(t))
	out, err := exec.Command("syncthing", "generate", "--home="+n.home, "--no-default-folder", "--skip-port-probing").CombinedOutput()
	if err != nil {
		t.Fatalf("syncthing generate: %v %s", err, out)
	}
	m := deviceIDRe.FindSubmatch(out)
	if m == nil {
		t.Fatalf("no device ID in:\n%s", out)
	}
	n.id = string(m[1])
	must(t, os.WriteFile(filepath.Join(n.folder, ".stfolder"), nil, 0o644))
	return n
}

// writeConfig writes n's config.xml: the shared folder with both devices,
// everything on 127.0.0.1, no discovery, relays, NAT, upgrades or
// reports, the watcher reporting changes after 1 s, and a failed dial
// retried after 5 s.
//
// Only the dialer knows its peer's address; the other side lists it as
// "dynamic", which with discovery off means it never dials. When both
// sides dialled each other at once after an unpause, each side's Hello
// exchange waited for the other until Syncthing's 20 s timeout, twice in
// a row, and used up waitSynced's minute (two CI runs failed so, one of
// them with the retry interval already at 5 s).
func (n *syncthingNode) writeConfig(t *testing.T, peer *syncthingNode, dialer bool) {
	t.Helper()
	dev := func(d *syncthingNode, dial bool) string {
		addr := "dynamic"
		if dial {
			addr = fmt.Sprintf("tcp://127.0.0.1:%d", d.listen)
		}
		return fmt.Sprintf(`<device id="%s" name="%s" compression="metadata" introducer="false"><address>%s</address><paused>false</paused></device>`,
			d.id, d.name, addr)
	}
	conf := fmt.Sprintf(`<configuration version="36">
<folder id="%s" label="vault" path="%s" type="sendreceive" rescanIntervalS="3600" fsWatcherEnabled="true" fsWatcherDelayS="1" ignorePerms="false" autoNormalize="true">
<device id="%s"></device><device id="%s"></device>
<minDiskFree unit="%%">0</minDiskFree><maxConflicts>10</maxConflicts><fsync>true</fsync>
</folder>
%s
%s
<gui enabled="true" tls="false"><address>%s</address><apikey>%s</apikey></gui>
<options>
<listenAddress>tcp://127.0.0.1:%d</listenAddress>
<globalAnnounceEnabled>false</globalAnnounceEnabled><localAnnounceEnabled>false</localAnnounceEnabled>
<relaysEnabled>false</relaysEnabled><natEnabled>false</natEnabled><startBrowser>false</startBrowser>
<urAccepted>-1</urAccepted><autoUpgradeIntervalH>0</autoUpgradeIntervalH><crashReportingEnabled>false</crashReportingEnabled>
<minHomeDiskFree unit="%%">0</minHomeDiskFree><setLowPriority>false</setLowPriority>
<reconnectionIntervalS>5</reconnectionIntervalS>
</options>
</configuration>
`, stFolderID, n.folder, n.id, peer.id, dev(n, false), dev(peer, dialer), strings.TrimPrefix(n.api, "http://"), stAPIKey, n.listen)
	must(t, os.WriteFile(filepath.Join(n.home, "config.xml"), []byte(conf), 0o600))
}

// newSyncthingPair makes two configured instances: a dials b, b only
// listens (see writeConfig).
func newSyncthingPair(t *testing.T) (a, b *syncthingNode) {
	t.Helper()
	a, b = newSyncthingNode(t, "a"), newSyncthingNode(t, "b")
	a.writeConfig(t, b, true)
	b.writeConfig(t, a, false)
	return a, b
}

// start runs the instance until the test ends.
func (n *syncthingNode) start(t *testing.T) {
	t.Helper()
	n.d = startDaemon(t, "syncthing", "serve", "--home="+n.home, "--no-browser", "--no-restart", "--no-upgrade",
		"--gui-address="+n.api, "--logfile=-")
	port, _ := strconv.Atoi(n.api[strings.LastIndex(n.api, ":")+1:])
	waitPort(t, port)
}

// call does a REST request and decodes a JSON answer into out (may be nil).
func (n *syncthingNode) call(t *testing.T, method, path string, out any) {
	t.Helper()
	req, err := http.NewRequest(method, n.api+path, nil)
	must(t, err)
	req.Header.Set("X-API-Key", stAPIKey)
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("syncthing %s %s %s: %v", n.name, method, path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("syncthing %s %s %s: %s %s", n.name, method, path, resp.Status, body)
	}
	if out != nil {
		must(t, json.Unmarshal(body, out))
	}
}

// scan asks for a rescan of the folder now (instead of waiting for the
// watcher).
func (n *syncthingNode) scan(t *testing.T) {
	n.call(t, "POST", "/rest/db/scan?folder="+stFolderID, nil)
}

// connected reports whether n is connected to peer.
func (n *syncthingNode) connected(t *testing.T, peer *syncthingNode) bool {
	var conns struct {
		Connections map[string]struct{ Connected bool }
	}
	n.call(t, "GET", "/rest/system/connections", &conns)
	return conns.Connections[peer.id].Connected
}

// inSync reports whether n has nothing left to pull, is idle, and knows
// that peer has everything too.
func (n *syncthingNode) inSync(t *testing.T, peer *syncthingNode) bool {
	var st struct {
		State     string
		NeedFiles int
	}
	n.call(t, "GET", "/rest/db/status?folder="+stFolderID, &st)
	var comp struct {
		Completion float64
		NeedItems  int
	}
	n.call(t, "GET", "/rest/db/completion?folder="+stFolderID+"&device="+peer.id, &comp)
	return st.State == "idle" && st.NeedFiles == 0 && comp.Completion == 100 && comp.NeedItems == 0
}

// waitSynced rescans both sides and waits (at most 60 s) until both are
// connected, idle, need nothing, and their folders hold the same names.
func waitSynced(t *testing.T, a, b *syncthingNode) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if a.connected(t, b) && b.connected(t, a) {
			a.scan(t)
			b.scan(t)
			if a.inSync(t, b) && b.inSync(t, a) && sameNames(t, a.folder, b.folder) {
				return
			}
		}
		time.Sleep(300 * time.Millisecond)
	}
	t.Fatalf("syncthing did not get in sync within 60 s\n--- a:\n%s\n--- b:\n%s", tail(a.d.out.String()), tail(b.d.out.String()))
}

// tail is the end of a long log.
func tail(s string) string {
	if len(s) > 4000 {
		return s[len(s)-4000:]
	}
	return s
}

// sameNames reports whether two trees hold the same relative paths
// (Syncthing's temporary files and own folders left out).
func sameNames(t *testing.T, a, b string) bool {
	names := func(dir string) map[string]bool {
		m := map[string]bool{}
		filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
			if err == nil && !strings.Contains(p, ".syncthing.") && !strings.Contains(p, ".stversions") {
				rel, _ := filepath.Rel(dir, p)
				m[rel] = true
			}
			return nil
		})
		return m
	}
	na, nb := names(a), names(b)
	if len(na) != len(nb) {
		return false
	}
	for k := range na {
		if !nb[k] {
			return false
		}
	}
	return true
}

// setPaused pauses or resumes n's connection to peer.
func (n *syncthingNode) setPaused(t *testing.T, peer *syncthingNode, paused bool) {
	t.Helper()
	op := "resume"
	if paused {
		op = "pause"
	}
	n.call(t, "POST", "/rest/system/"+op+"?device="+peer.id, nil)
}

// disconnect pauses a pair on both sides and waits until neither is
// connected.
func disconnect(t *testing.T, a, b *syncthingNode) {
	t.Helper()
	a.setPaused(t, b, true)
	b.setPaused(t, a, true)
	waitFor(t, "disconnect", func() bool { return !a.connected(t, b) && !b.connected(t, a) })
}

// reconnect resumes a pair made by newSyncthingPair: the listener b
// first, so that a's first dial is let in.
func reconnect(t *testing.T, a, b *syncthingNode) {
	t.Helper()
	b.setPaused(t, a, false)
	a.setPaused(t, b, false)
}

// syncConflictRe is the plaintext name of Syncthing's conflict copy of
// "note.txt" in the mount.
var syncConflictRe = regexp.MustCompile(`^note\.txt\.sync-conflict-[0-9]{8}-[0-9]{6}-[A-Z0-9]{7}$`)

// TestSyncthing: two Syncthing instances (Debian's) on 127.0.0.1 keep two
// copies of one vault in step; each copy is mounted. While disconnected,
// both sides edit the same file and make a directory of the same name
// with a file in it; after reconnecting, the conflict copy Syncthing makes
// shows in both mounts as note.txt.sync-conflict-… with its decrypted
// name and reads back the other side's data, both directories' files are
// readable, and fsck finds both copies clean.
func TestSyncthing(t *testing.T) {
	requireTool(t, "syncthing")
	a, b := newSyncthingPair(t)

	cipherA := filepath.Join(a.folder, "vault")
	pf := writePassfile(t, "pw")
	run(t, "", append(append([]string{"init", "--passfile", pf}, cheapKDF...), cipherA)...).want(t, 0)
	a.start(t)
	b.start(t)
	waitSynced(t, a, b)
	cipherB := filepath.Join(b.folder, "vault")

	mntA, mntB := t.TempDir(), t.TempDir()
	// Two devices on one machine: each its own freshness state.
	stateOf := map[string]string{cipherA: filepath.Join(t.TempDir(), "state-a"), cipherB: filepath.Join(t.TempDir(), "state-b")}
	for _, m := range [][2]string{{cipherA, mntA}, {cipherB, mntB}} {
		cleanupMount(t, m[1])
		run(t, "", "mount", "--shared-storage", "--state-dir", stateOf[m[0]], "--passfile", pf, m[0], m[1]).want(t, 0)
	}
	must(t, os.WriteFile(filepath.Join(mntA, "note.txt"), []byte("first version\n"), 0o644))
	waitSynced(t, a, b)
	if got, err := os.ReadFile(filepath.Join(mntB, "note.txt")); err != nil || string(got) != "first version\n" {
		t.Fatalf("b reads %q, %v", got, err)
	}

	// Disconnected: both sides change note.txt and make "same/".
	disconnect(t, a, b)
	for _, s := range []struct{ name, mnt string }{{"a", mntA}, {"b", mntB}} {
		must(t, os.WriteFile(filepath.Join(s.mnt, "note.txt"), []byte("edited on "+s.name+"\n"), 0o644))
		must(t, os.Mkdir(filepath.Join(s.mnt, "same"), 0o755))
		must(t, os.WriteFile(filepath.Join(s.mnt, "same", "from-"+s.name), []byte("made on "+s.name+"\n"), 0o644))
	}
	a.scan(t)
	b.scan(t)
	reconnect(t, a, b)
	waitSynced(t, a, b)

	for _, s := range []struct{ name, mnt string }{{"a", mntA}, {"b", mntB}} {
		ents, err := os.ReadDir(s.mnt)
		must(t, err)
		var conflict string
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
			if syncConflictRe.MatchString(e.Name()) {
				conflict = e.Name()
			}
		}
		if conflict == "" {
			t.Fatalf("%s: no note.txt.sync-conflict-… in the mount: %q", s.name, names)
		}
		cur, err1 := os.ReadFile(filepath.Join(s.mnt, "note.txt"))
		old, err2 := os.ReadFile(filepath.Join(s.mnt, conflict))
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: read note.txt: %v; read %s: %v", s.name, err1, conflict, err2)
		}
		pair := string(cur) + string(old)
		if pair != "edited on a\nedited on b\n" && pair != "edited on b\nedited on a\n" {
			t.Fatalf("%s: note.txt %q and its conflict copy %q are not the two sides' edits", s.name, cur, old)
		}
		// "same" was made on both sides: one ID won; the other side's
		// file shows as from-X.sync-conflict-… (its directory's ID lost).
		sameEnts, err := os.ReadDir(filepath.Join(s.mnt, "same"))
		must(t, err)
		for _, side := range []string{"a", "b"} {
			found := false
			for _, e := range sameEnts {
				if e.Name() == "from-"+side || strings.HasPrefix(e.Name(), "from-"+side+".sync-conflict-") {
					found = true
					got, err := os.ReadFile(filepath.Join(s.mnt, "same", e.Name()))
					if err != nil || string(got) != "made on "+side+"\n" {
						t.Errorf("%s: same/%s made on %s while disconnected: %q, %v", s.name, e.Name(), side, got, err)
					}
				}
			}
			if !found {
				out, _ := exec.Command(binary, "ls", "-R", "--passfile", pf, cipherA).CombinedOutput()
				t.Errorf("%s: the file made in same/ on %s is not shown: %v\n%s", s.name, side, sameEnts, out)
			}
		}
	}
	for _, m := range []string{mntA, mntB} {
		run(t, "", "unmount", m).want(t, 0)
	}
	for _, c := range []string{cipherA, cipherB} {
		r := run(t, "", "fsck", "--state-dir", stateOf[c], "--passfile", pf, c)
		// Clean, with the conflict copies as notes; the entries no device
		// recorded yet make freshness say behind, and fsck exits with
		// freshness status's 27 for it.
		if r.code != ExitFreshBehind || !strings.Contains(r.stdout, "note: conflict-copy") || !strings.Contains(r.stdout, ": clean, ") {
			t.Errorf("fsck %s: exit %d, want 27 (clean but behind) with the conflict copies as notes\n%s%s", c, r.code, r.stdout, r.stderr)
		}
	}
}
