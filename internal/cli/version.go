package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// commit is the source revision, set by a build that passes
// -ldflags "-X github.com/encryptfs/encryptfs/internal/cli.commit=$(git rev-parse --short HEAD)"
// (scripts/demo.sh, README). Without it the revision go build stamped
// (-buildvcs) is used, if any.
var commit string

// goFusePath is the module whose version a bug report needs besides ours.
const goFusePath = "github.com/hanwen/go-fuse/v2"

// versionLine is what --version and "encryptfs version" print: the
// version, the commit, the Go version and go-fuse's version.
func versionLine() string {
	rev, dirty, fuse := commit, false, "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch {
			case s.Key == "vcs.revision" && rev == "":
				rev = s.Value
				if len(rev) > 12 {
					rev = rev[:12]
				}
			case s.Key == "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		for _, d := range bi.Deps {
			if d.Path == goFusePath {
				fuse = d.Version
				if d.Replace != nil {
					fuse = d.Replace.Version + " (replaced)"
				}
			}
		}
	}
	if rev == "" {
		rev = "unknown (built without -buildvcs or -ldflags -X ...cli.commit)"
	} else if dirty && !strings.HasSuffix(rev, "-dirty") {
		rev += "-dirty"
	}
	return fmt.Sprintf("encryptfs %s\ncommit %s\n%s, go-fuse %s\n", Version, rev, runtime.Version(), fuse)
}

func newVersionCommand(a *App) *cobra.Command {
	cmd := newCommand("version", "", 0, 0, groupOther, "print the version, commit, Go and go-fuse versions")
	cmd.RunE = func(*cobra.Command, []string) error {
		fmt.Fprint(a.Stdout, versionLine())
		return nil
	}
	return cmd
}
