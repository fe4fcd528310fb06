package mount_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/encryptfs/encryptfs/internal/fstest/mounttest"
	"golang.org/x/sys/unix"
)

// TestReadahead: a mount by root reads ahead two of the largest READs
// (2 MiB), not the kernel's 128 KiB, so that a sequential read arrives as
// 1 MiB READs (TestRequestCounts counts them), one answered while the
// reader copies the other.
func TestReadahead(t *testing.T) {
	mounttest.RequireRoot(t)
	v := mounttest.NewVault(t, nil)
	var st unix.Stat_t
	must(t, unix.Stat(v.Mnt, &st))
	b, err := os.ReadFile(fmt.Sprintf("/sys/class/bdi/%d:%d/read_ahead_kb", unix.Major(st.Dev), unix.Minor(st.Dev)))
	must(t, err)
	if got := strings.TrimSpace(string(b)); got != "2048" {
		t.Errorf("read_ahead_kb %s, want 2048", got)
	}
}
