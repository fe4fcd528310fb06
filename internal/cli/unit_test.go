package cli

import (
	"bytes"
	"io/fs"
	"reflect"
	"strings"
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

func TestMountOptions(t *testing.T) {
	var m mountFlags

	if err := m.parseOptions("rw,ro,allow_other,idle=5m,passfile=/k,nofail,x-systemd.automount,nodev,noexec,shared_storage,show_undecryptable"); err != nil {
		t.Fatal(err)
	}
	if !m.readOnly || !m.allowOther || m.idle != 5*time.Minute || m.unlock.src.passfile != "/k" || !m.sharedStorage || !m.showBad ||
		!reflect.DeepEqual(m.extra, []string{"nodev", "noexec"}) {
		t.Fatalf("%+v", m)
	}
	// fstab/systemd-only options are dropped; what mount.fuse3 adds
	// (dev,suid) and kernel options go to the FUSE mount.
	for _, tc := range []struct{ opt, extra string }{
		{"defaults", ""}, {"auto", ""}, {"noauto", ""}, {"user", ""}, {"users", ""}, {"nouser", ""},
		{"owner", ""}, {"group", ""}, {"nofail", ""}, {"_netdev", ""}, {"comment=systemd.automount", ""},
		{"x-systemd.requires=net.target", ""}, {"x-systemd.device-timeout=5s", ""},
		{"dev", "dev"}, {"suid", "suid"}, {"nosuid", "nosuid"},
	} {
		var m mountFlags
		if err := m.parseOptions(tc.opt); err != nil || strings.Join(m.extra, ",") != tc.extra {
			t.Errorf("%s: extra %q, %v; want %q", tc.opt, m.extra, err, tc.extra)
		}
	}
	var fo mountFlags
	if err := fo.parseOptions("force_owner=1000:100"); err != nil || fo.forceOwner == nil ||
		fo.forceOwner.UID != 1000 || fo.forceOwner.GID != 100 || !fo.allowOther {
		t.Errorf("force_owner: %+v, %v", fo.forceOwner, err)
	}
	for _, bad := range []string{"idle=soon", "passfile", "force_owner", "force_owner=1000", "force_owner=a:b", "force_owner=-1:0", "garbage", "nonempty", "noexec=1", "max_read=4096"} {
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

// FuzzParseMasterKey: never panics; whatever parses is 32 bytes and
// formats back to something that parses to the same key.
func FuzzParseMasterKey(f *testing.F) {
	f.Add([]byte(formatMasterKey(make([]byte, 32))))
	f.Add([]byte("00-11 22"))
	f.Fuzz(func(t *testing.T, in []byte) {
		key, err := parseMasterKey(in)
		if err != nil {
			return
		}
		again, err := parseMasterKey([]byte(formatMasterKey(key)))
		if len(key) != 32 || err != nil || !bytes.Equal(again, key) {
			t.Fatalf("round trip of %x: %x, %v", key, again, err)
		}
	})
}

// FuzzMountOptions: -o parsing never panics and keeps every unknown
// option for the kernel.
func FuzzMountOptions(f *testing.F) {
	f.Add("ro,allow_other,idle=5m,passfile=/k,nodev")
	f.Add(",,=,x-a=b")
	f.Fuzz(func(t *testing.T, s string) {
		var m mountFlags
		_ = m.parseOptions(s)
	})
}

func TestUnixMode(t *testing.T) {
	for _, tc := range []struct {
		m    fs.FileMode
		want string
	}{
		{0o644, "-rw-r--r--"},
		{fs.ModeSymlink | 0o777, "lrwxrwxrwx"},
		{fs.ModeDir | fs.ModeSticky | 0o1777&0o777, "drwxrwxrwt"},
		{fs.ModeDir | fs.ModeSticky | 0o776, "drwxrwxrwT"},
		{fs.ModeSetuid | fs.ModeSetgid | 0o755, "-rwsr-sr-x"},
		{fs.ModeSetuid | 0o644, "-rwSr--r--"},
		{fs.ModeNamedPipe | 0o600, "prw-------"},
		{fs.ModeDevice | fs.ModeCharDevice | 0o666, "crw-rw-rw-"},
		{fs.ModeDevice | 0o660, "brw-rw----"},
		{fs.ModeSocket | 0o755, "srwxr-xr-x"},
	} {
		if got := unixMode(tc.m); got != tc.want {
			t.Errorf("unixMode(%v) = %q, want %q", tc.m, got, tc.want)
		}
	}
}
