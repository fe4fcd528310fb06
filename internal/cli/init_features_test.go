package cli

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/encryptfs/encryptfs/internal/config"
)

// TestInitFeatures: init makes format 2 with location binding, file roots
// and freshness; --file-roots=false and --freshness=false leave one out
// (binding stays: the others need it); both are refused for format 1.
func TestInitFeatures(t *testing.T) {
	pf := writePassfile(t, "pw")
	for _, c := range []struct {
		flags []string
		want  []string
		not   []string
	}{
		{nil, []string{config.FlagBoundLocations, config.FlagFileRoots, config.FlagCompactRoots, config.FlagFreshness, config.FlagManifestBuckets}, nil},
		{[]string{"--format", "2"}, []string{config.FlagBoundLocations, config.FlagFileRoots, config.FlagCompactRoots, config.FlagFreshness, config.FlagManifestBuckets}, nil},
		{[]string{"--file-roots=false"}, []string{config.FlagBoundLocations, config.FlagFreshness, config.FlagManifestBuckets}, []string{config.FlagFileRoots, config.FlagCompactRoots}},
		{[]string{"--compact-roots=false"}, []string{config.FlagBoundLocations, config.FlagFileRoots, config.FlagFreshness, config.FlagManifestBuckets}, []string{config.FlagCompactRoots}},
		{[]string{"--freshness=false"}, []string{config.FlagBoundLocations, config.FlagFileRoots, config.FlagCompactRoots}, []string{config.FlagFreshness, config.FlagManifestBuckets}},
	} {
		dir := filepath.Join(t.TempDir(), "cipher")
		run(t, "", append(append([]string{"init", "--passfile", pf}, cheapKDF...), append(c.flags, dir)...)...).want(t, 0)
		cfg, err := config.Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range c.want {
			if !cfg.Params.Has(f) {
				t.Errorf("init %v: no %s in %v", c.flags, f, cfg.Params.FeatureFlags)
			}
		}
		for _, f := range c.not {
			if slices.Contains(cfg.Params.FeatureFlags, f) {
				t.Errorf("init %v: %s in %v", c.flags, f, cfg.Params.FeatureFlags)
			}
		}
	}
	dir := filepath.Join(t.TempDir(), "cipher")
	run(t, "", append(append([]string{"init", "--passfile", pf, "--format", "1"}, cheapKDF...), "--freshness=false", dir)...).want(t, ExitUsage)
}
