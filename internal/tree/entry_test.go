package tree

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/encryptfs/encryptfs/internal/crypto/names"
)

// TestIsEntryName: the one rule of what a backing name stands for.
func TestIsEntryName(t *testing.T) {
	long := names.LongNamePrefix + strings.Repeat("A", 43)
	for name, want := range map[string]bool{
		"AbC-_0":                             true, // an encrypted name
		".stfolder":                          true, // not reserved: an entry (one that does not decrypt)
		long:                                 true,
		long + " (1)":                        true, // a sync tool's copy of a long-name entry
		long + names.LongNameSuffix:          false,
		names.DirIDFile:                      false,
		names.TempPrefix + "x":               false,
		"encryptfs.conf":                     false,
		"encryptfs.anything-else":            false,
		long + " (1)" + names.LongNameSuffix: false,
	} {
		if !names.IsLongName(long) {
			t.Fatal("test long name is not one")
		}
		if got := IsEntryName(name); got != want {
			t.Errorf("IsEntryName(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestParseDirIDFile: the two forms of the ID file, and nothing else.
func TestParseDirIDFile(t *testing.T) {
	id := bytes.Repeat([]byte{7}, names.DirIDSize)
	f, err := ParseDirIDFile(id)
	if err != nil || f.V2 || !bytes.Equal(f.ID, id) {
		t.Fatalf("v1: %+v %v", f, err)
	}
	v2 := make([]byte, DirIDFileSizeV2)
	v2[1] = 2
	v2[5] = 3
	copy(v2[6:], id)
	v2[22] = 9
	f, err = ParseDirIDFile(v2)
	if err != nil || !f.V2 || f.Epoch != 3 || !bytes.Equal(f.ID, id) || len(f.Bindings) != 2 || f.Bindings[0][0] != 9 {
		t.Fatalf("v2: %+v %v", f, err)
	}
	v2[1] = 3
	for _, b := range [][]byte{v2, id[:15], append(id, 0), nil} {
		if _, err := ParseDirIDFile(b); !errors.Is(err, ErrCorruptDir) {
			t.Errorf("%d bytes: %v", len(b), err)
		}
	}
}
