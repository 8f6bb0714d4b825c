package main

import (
	"io"
	"testing"
)

// TestBenchIsASubcommand checks that `loadtest bench` (make bench) is in the
// command tree with its pages flag, so the pages at 1M runs keep a command.
func TestBenchIsASubcommand(t *testing.T) {
	root := rootCmd(io.Discard, io.Discard)
	cmd, _, err := root.Find([]string{"bench"})
	if err != nil || cmd.Name() != "bench" {
		t.Fatalf("loadtest bench is not a subcommand: %v (found %q)", err, cmd.Name())
	}
	if cmd.Flags().Lookup("page-requests") == nil {
		t.Error("loadtest bench has no --page-requests flag")
	}
}
