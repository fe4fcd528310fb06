package mount_test

import (
	"testing"

	"github.com/encryptfs/encryptfs/internal/fstest/mounttest"
)

// TestMain fails the suite if a test left one of its mounts behind.
func TestMain(m *testing.M) { mounttest.Main(m) }

// must fails t on a non-nil err.
var must = mounttest.Must
