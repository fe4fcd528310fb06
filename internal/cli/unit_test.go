package cli

import (
	"bytes"
	"reflect"
	"testing"
	"time"
)

func TestMasterKeyFormat(t *testing.T) {
	key := make([]byte, 32)
	for i := range key {
		key[i] = byte(i * 7)
	}
	s := formatMasterKey(key)
	for _, in := range []string{s, s + "\n", string(bytes.ToUpper([]byte(s))), "  " + s + "  "} {
		got, err := parseMasterKey([]byte(in))
		if err != nil || !bytes.Equal(got, key) {
			t.Fatalf("parseMasterKey(%q) = %x, %v", in, got, err)
		}
	}
	for _, bad := range []string{"", s[:len(s)-1], s + "00", "g" + s[1:]} {
		if _, err := parseMasterKey([]byte(bad)); err == nil {
			t.Errorf("parseMasterKey(%q) accepted", bad)
		}
	}
}

func TestParseArgsInterleaved(t *testing.T) {
	tests := []struct {
		args    []string
		wantPos []string
		wantF   bool
	}{
		{[]string{"-f", "a", "b"}, []string{"a", "b"}, true},
		{[]string{"a", "-f", "b"}, []string{"a", "b"}, true},
		{[]string{"a", "b", "-f"}, []string{"a", "b"}, true},
		{[]string{"a", "--", "-f"}, []string{"a", "-f"}, false},
	}
	for _, tt := range tests {
		a := &App{}
		fs := a.newFlagSet("x", "A B")
		f := fs.Bool("f", false, "")
		pos, err := fs.parse(tt.args, 2, 2)
		if err != nil || !reflect.DeepEqual(pos, tt.wantPos) || *f != tt.wantF {
			t.Errorf("parse(%q) = %q, f=%v, %v", tt.args, pos, *f, err)
		}
	}
}

func TestMountOptions(t *testing.T) {
	var m mountFlags

	if err := m.parseOptions("rw,ro,allow_other,idle=5m,passfile=/k,nofail,x-systemd.automount,nodev,noexec,shared_storage"); err != nil {
		t.Fatal(err)
	}
	if !m.readOnly || !m.allowOther || m.idle != 5*time.Minute || m.src.passfile != "/k" || !m.sharedStorage ||
		!reflect.DeepEqual(m.extra, []string{"nodev", "noexec"}) {
		t.Fatalf("%+v", m)
	}
	for _, bad := range []string{"idle=soon", "passfile"} {
		if err := (&mountFlags{}).parseOptions(bad); err == nil {
			t.Errorf("parseOptions(%q) accepted", bad)
		}
	}
}

func TestUnescapeMountinfo(t *testing.T) {
	for in, want := range map[string]string{`/a\040b`: "/a b", `/plain`: "/plain", `/x\134y`: `/x\y`, `/end\04`: `/end\04`} {
		if got := unescapeMountinfo(in); got != want {
			t.Errorf("unescapeMountinfo(%q) = %q, want %q", in, got, want)
		}
	}
}
