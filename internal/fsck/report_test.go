package fsck

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/session"
)

func TestProblemLine(t *testing.T) {
	tests := []struct {
		p    Problem
		want string
	}{
		{Problem{Kind: KindChunk, CipherPath: "a/b", PlainPath: "/x y", Ranges: []Range{{0, 10}, {10, 20}, {40, 50}}, Detail: "d", SalvagedAs: "x y"},
			`bad-chunk a/b (plain "/x y"): bytes 0-19, 40-49: d [salvaged as "x y"]`},
		{Problem{Kind: KindForeign, CipherPath: "f.txt", Detail: "not ours"},
			`foreign-name f.txt (plain name unknown): not ours`},
		{Problem{Kind: KindBadName, CipherPath: "a\nb", Detail: "x"},
			`bad-name "a\nb" (plain name unknown): x`},
	}
	for _, tt := range tests {
		if got := ProblemLine(tt.p); got != tt.want {
			t.Errorf("got  %s\nwant %s", got, tt.want)
		}
	}
}

// TestJSONShape pins the field names of the --json output.
func TestJSONShape(t *testing.T) {
	rep := &Report{CipherDir: "/c", Problems: []Problem{{Kind: KindChunk, CipherPath: "a", PlainPath: "/p", Ranges: []Range{{1, 2}}, Detail: "d"}}}
	(&walker{rep: rep}).finish()
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	keys := func(m map[string]any) []string {
		var out []string
		for k := range m {
			out = append(out, k)
		}
		slices.Sort(out)
		return out
	}
	if got := keys(m); !reflect.DeepEqual(got, []string{"CipherDir", "Clean", "Problems", "Summary"}) {
		t.Errorf("report keys %v", got)
	}
	p := m["Problems"].([]any)[0].(map[string]any)
	if got := keys(p); !reflect.DeepEqual(got, []string{"CipherPath", "Detail", "Kind", "PlainPath", "Ranges"}) {
		t.Errorf("problem keys %v", got)
	}
	if got := keys(p["Ranges"].([]any)[0].(map[string]any)); !reflect.DeepEqual(got, []string{"End", "Start"}) {
		t.Errorf("range keys %v", got)
	}
	s := m["Summary"].(map[string]any)
	if s["Problems"].(float64) != 1 || s["ByKind"].(map[string]any)["bad-chunk"].(float64) != 1 {
		t.Errorf("summary %v", s)
	}
	if !strings.Contains(SummaryLine(rep), "1 problem (1 bad-chunk)") {
		t.Errorf("summary line %q", SummaryLine(rep))
	}
}

// TestHintEditedParams: with another chunk size (as if encryptfs.conf had
// been edited) every file fails and the report says why that may be.
func TestHintEditedParams(t *testing.T) {
	fx := newFixture(t)
	c, err := config.Load(fx.dir)
	if err != nil {
		t.Fatal(err)
	}
	c.Params.ChunkSize = 2 * chunk
	if fx.sess, err = session.New(fx.dir, c.Params, fx.master, session.Options{}); err != nil {
		t.Fatal(err)
	}
	fx.tree = fx.sess.Tree()
	rep := fx.check(t, Options{})
	if len(rep.Hints) != 1 || !strings.Contains(rep.Hints[0], "ChunkSize") {
		t.Fatalf("hints %q\n%s", rep.Hints, dump(rep))
	}
	if clean := newFixture(t).check(t, Options{}); len(clean.Hints) != 0 {
		t.Errorf("hints on a clean vault: %q", clean.Hints)
	}
}
