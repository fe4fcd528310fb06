package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// The manual pages are cobra's (spf13/cobra/doc): encryptfs(1) and one
// encryptfs-COMMAND(1) per command, from the same tree that parses the
// command line. scripts/gen-docs.sh writes them to docs/man/ and
// TestManPagesCurrent fails when the committed copies differ.

// manHeader is the pages' .TH line. Its date is fixed so that generating
// the pages twice gives the same bytes (cobra would put today's): move it
// with Version.
func manHeader() *doc.GenManHeader {
	date := time.Date(2026, time.January, 1, 0, 0, 0, 0, time.UTC)
	return &doc.GenManHeader{Section: "1", Date: &date, Source: "encryptfs " + Version, Manual: "User Commands"}
}

// manPages renders every page: file name -> roff.
func manPages(root *cobra.Command) (map[string][]byte, error) {
	pages := map[string][]byte{}
	var walk func(c *cobra.Command) error
	walk = func(c *cobra.Command) error {
		if c != root && (!c.IsAvailableCommand() || c.IsAdditionalHelpTopicCommand()) {
			return nil
		}
		var buf bytes.Buffer
		if err := doc.GenMan(c, manHeader(), &buf); err != nil {
			return err
		}
		pages[strings.ReplaceAll(c.CommandPath(), " ", "-")+".1"] = buf.Bytes()
		for _, child := range c.Commands() {
			if err := walk(child); err != nil {
				return err
			}
		}
		return nil
	}
	return pages, walk(root)
}

// newManCommand is "encryptfs man [--dir DIR]".
func (a *App) newManCommand() *cobra.Command {
	cmd := newCommand("man", "", 0, 0, groupOther, "print the encryptfs(1) manual page, or write all pages with --dir")
	dir := cmd.Flags().String("dir", "", "write encryptfs.1 and every encryptfs-COMMAND.1 into `DIR`, removing stale encryptfs*.1 there")
	mustMark(cmd.MarkFlagDirname("dir"))
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		pages, err := manPages(cmd.Root())
		if err != nil {
			return err
		}
		if *dir == "" {
			_, err := a.Stdout.Write(pages["encryptfs.1"])
			return err
		}
		return writeManDir(*dir, pages)
	}
	return cmd
}

// writeManDir replaces the encryptfs*.1 pages in dir with pages.
func writeManDir(dir string, pages map[string][]byte) error {
	old, err := filepath.Glob(filepath.Join(dir, "encryptfs*.1"))
	if err != nil {
		return err
	}
	for _, p := range old {
		if _, keep := pages[filepath.Base(p)]; !keep {
			if err := os.Remove(p); err != nil {
				return err
			}
		}
	}
	for name, b := range pages {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return fmt.Errorf("man: %w", err)
		}
	}
	return nil
}
