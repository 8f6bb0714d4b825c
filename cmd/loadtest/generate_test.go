package main

import (
	"bytes"
	"io"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/conductor-shadow/conductor-shadow/cmd/internal/platform"
	"github.com/conductor-shadow/conductor-shadow/store/storetest"
)

// TestEveryLoadtestCommandDeclaresItsStore: the load harness's servers keep
// their stores in folders of their own; generate and bench fill a new folder only.
func TestEveryLoadtestCommandDeclaresItsStore(t *testing.T) {
	want := map[string]platform.StoreAccess{
		"loadtest":            platform.AccessNone,
		"loadtest bare-proxy": platform.AccessNone,
		"loadtest incumbent":  platform.AccessNone,
		"loadtest durability": platform.AccessNone,
		"loadtest generate":   platform.AccessNew,
		"loadtest bench":      platform.AccessNew,
	}
	got := platform.DeclaredStores(rootCmd(io.Discard, io.Discard))
	if !maps.Equal(got, want) {
		t.Fatalf("commands and their store access:\n got %v\nwant %v", got, want)
	}
}

// TestGenerateOnlyIntoANewFolder: generate refuses the configured folder
// without the load-testing flag and any folder that holds something; into a
// new folder it writes rows of source 'generated' with a progress bar on
// stderr, and measures the pages.
func TestGenerateOnlyIntoANewFolder(t *testing.T) {
	if os.Getenv(generateChildEnv) == "" {
		storetest.RequireEngine(t)
		cmd := exec.Command(os.Args[0], "-test.run=^TestGenerateOnlyIntoANewFolder$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), generateChildEnv+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestGenerateOnlyIntoANewFolder") {
			t.Fatalf("in a process of its own: %v\n%s", err, out)
		}
		return
	}
	dir := t.TempDir()
	t.Setenv("CONDUCTOR_SHADOW_ADDR", freeAddr(t))
	used := filepath.Join(dir, "data")
	if err := os.MkdirAll(filepath.Join(used, "metadata"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CONDUCTOR_SHADOW_DATA", used) // the configured folder
	for _, tt := range []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"the configured folder without the flag", []string{"generate"}, "give --data NEW_FOLDER, or --load-test-into-default-data to fill the configured folder " + used},
		{"the configured folder with the flag, not empty", []string{"generate", "--load-test-into-default-data"}, "data folder " + used + " is not empty"},
		{"a folder that holds something", []string{"--data", used, "generate"}, "data folder " + used + " is not empty (1 entries)"},
		{"measuring a folder without a store", []string{"--data", filepath.Join(dir, "typo"), "generate", "--skip-insert"}, "no store in " + filepath.Join(dir, "typo")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := run(t.Context(), tt.args, io.Discard, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err %v, want %q", err, tt.wantErr)
			}
		})
	}
	if entries, _ := os.ReadDir(used); len(entries) != 1 {
		t.Fatalf("the refused folder was written to: %v", entries)
	}

	storetest.RequireEngine(t)
	fresh := filepath.Join(dir, "load")
	var stdout, stderr bytes.Buffer
	if err := run(t.Context(), []string{"--data", fresh, "generate", "--requests", "40", "--iterations", "1", "--progress"}, &stdout, &stderr); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	if !strings.Contains(stdout.String(), "40 requests, 80 runs, 400 steps, source 'generated'") || !strings.Contains(stdout.String(), "overview (24 h)") {
		t.Errorf("stdout %q", stdout.String())
	}
	e := stderr.String()
	if !strings.HasPrefix(e, "store: embedded chDB in "+fresh) || !strings.Contains(e, "40/40") || !strings.Contains(e, "16/16") {
		t.Errorf("stderr: want the store line, the generation's bar to 40/40 and the renders' to 16/16:\n%s", e)
	}
	if strings.Contains(stdout.String(), "40/40") {
		t.Error("a progress bar went to stdout")
	}
	cfg := platform.NewDefaultConfig()
	cfg.Store.Path = fresh
	st, _, err := platform.OpenExistingStore(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	res, err := st.Query(t.Context(), "SELECT groupUniqArray(source), count() FROM requests")
	if err != nil || len(res.Rows) != 1 || res.Rows[0][0] != "['generated']" || res.Rows[0][1] != "40" {
		t.Fatalf("sources of the generated requests: %v, %v", res.Rows, err)
	}
}

// freeAddr is a loopback address nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
