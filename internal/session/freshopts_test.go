package session

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/fresh"
)

// TestWithParamsFreshness: the feature flag "Freshness" turns freshness
// on for every session (a writer by default), in the state directory
// named by the VaultID under XDG_STATE_HOME unless the options name one;
// FreshnessCheck opens it offline, FreshnessOff not at all; a caller's
// Options.Freshness wins; no flag, no freshness.
func TestWithParamsFreshness(t *testing.T) {
	root := t.TempDir()
	t.Setenv("XDG_STATE_HOME", root)
	vid := bytes.Repeat([]byte{0xab}, config.VaultIDSize)
	bound, err := config.NewParamsV2("aes-256-gcm", 4096).WithBoundLocations(vid)
	if err != nil {
		t.Fatal(err)
	}
	withFlag, err := bound.WithFeature(config.FlagFreshness)
	if err != nil {
		t.Fatal(err)
	}
	logged := func(string) {}
	own := &fresh.Options{StateDir: "/elsewhere"}
	def := filepath.Join(root, "encryptfs", "abababababababababababababababab")
	for name, tc := range map[string]struct {
		p        config.Params
		o        Options
		wantDir  string // "": no freshness
		wantOff  bool
		wantOwn  bool
		wantLogs bool
	}{
		"default records":   {p: withFlag, wantDir: def},
		"state dir given":   {p: withFlag, o: Options{FreshnessStateDir: "/s", FreshnessLog: logged}, wantDir: "/s", wantLogs: true},
		"check only":        {p: withFlag, o: Options{FreshnessUse: FreshnessCheck}, wantDir: def, wantOff: true},
		"off":               {p: withFlag, o: Options{FreshnessUse: FreshnessOff}},
		"no flag":           {p: bound},
		"caller's hook":     {p: bound, o: Options{Freshness: own}, wantDir: "/elsewhere", wantOwn: true},
		"caller's hook too": {p: withFlag, o: Options{Freshness: own, FreshnessUse: FreshnessOff}, wantDir: "/elsewhere", wantOwn: true},
	} {
		t.Run(name, func(t *testing.T) {
			o, err := tc.o.withParams(tc.p)
			if err != nil {
				t.Fatal(err)
			}
			f := o.Freshness
			switch {
			case tc.wantDir == "" && f != nil:
				t.Fatalf("freshness on: %+v", f)
			case tc.wantDir == "":
				return
			case f == nil:
				t.Fatal("freshness off")
			case f.StateDir != tc.wantDir:
				t.Fatalf("state dir %q, want %q", f.StateDir, tc.wantDir)
			case tc.wantOwn != (f == own):
				t.Fatal("the caller's Options.Freshness not kept")
			case !tc.wantOwn && (f.Offline != tc.wantOff || !bytes.Equal(f.VaultID, vid) || (f.Log != nil) != tc.wantLogs):
				t.Fatalf("options %+v", f)
			}
		})
	}
}
