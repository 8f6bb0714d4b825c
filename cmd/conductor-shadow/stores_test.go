package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/conductor-shadow/conductor-shadow/cmd/internal/platform"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// TestEveryCommandDeclaresItsStore lists every command with how it reaches
// the store (platform.ResolveStore decides from it): a new command must be
// added here, and a command cannot change its access unnoticed.
func TestEveryCommandDeclaresItsStore(t *testing.T) {
	want := map[string]platform.StoreAccess{
		"conductor-shadow serve":          platform.AccessOwn,
		"conductor-shadow replay":         platform.AccessServer,
		"conductor-shadow suite run":      platform.AccessEither,
		"conductor-shadow query":          platform.AccessEither,
		"conductor-shadow forget":         platform.AccessEither,
		"conductor-shadow review export":  platform.AccessEither,
		"conductor-shadow data-flows":     platform.AccessEither,
		"conductor-shadow shift":          platform.AccessEither,
		"conductor-shadow set build":      platform.AccessHere,
		"conductor-shadow export rewards": platform.AccessHere,
		"conductor-shadow grade":          platform.AccessNone,
		"conductor-shadow plan parse":     platform.AccessNone,
		"conductor-shadow power":          platform.AccessNone,
		"conductor-shadow validity":       platform.AccessNone,
	}
	got := platform.DeclaredStores(rootCmd(io.Discard, io.Discard))
	if !maps.Equal(got, want) {
		t.Fatalf("commands and their store access:\n got %v\nwant %v", got, want)
	}
	// The commands that may go through the server take --local to skip it.
	root := rootCmd(io.Discard, io.Discard)
	for name, a := range got {
		if a != platform.AccessEither {
			continue
		}
		c, _, err := root.Find(strings.Fields(name)[1:])
		if err != nil || c.Flags().Lookup("local") == nil {
			t.Errorf("%s: through the server, else here, but no --local (%v)", name, err)
		}
	}
}

// storeCommands are the commands that read or write a store, with the
// arguments that get them to opening it.
var storeCommands = []struct {
	name string
	args []string
}{
	{"query", []string{"query", "SELECT 1"}},
	{"suite run", []string{"suite", "run", "--limit", "1"}},
	{"forget", []string{"forget", "--subject", "user-42"}},
	{"shift", []string{"shift", "--set", "../../regression-sets/gsm8k-150.jsonl"}},
	{"set build", []string{"set", "build", "--out", "set.jsonl"}},
	{"export rewards", []string{"export", "rewards", "--suite-run", "suite-1"}},
}

// TestReadCommandsRefuseAFolderWithoutAStore: a mistyped --data (or an empty
// folder) is an error naming the folder and how to create a store, never a
// new empty store; each command first says on stderr which store it reads.
func TestReadCommandsRefuseAFolderWithoutAStore(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("CONDUCTOR_SHADOW_ADDR", freeAddr(t)) // nothing answers: the store is opened here
	empty := filepath.Join(dir, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range storeCommands {
		for _, folder := range []string{filepath.Join(dir, "dta-"+strings.ReplaceAll(c.name, " ", "-")), empty} {
			t.Run(c.name+" "+filepath.Base(folder), func(t *testing.T) {
				var stderr bytes.Buffer
				err := run(t.Context(), append([]string{"--data", folder}, c.args...), io.Discard, &stderr)
				if err == nil || !strings.Contains(err.Error(), "no store in "+folder) || !strings.Contains(err.Error(), "`conductor-shadow serve --data "+folder+"`") {
					t.Fatalf("err %v, want it to name %s and how to create a store", err, folder)
				}
				if !strings.HasPrefix(stderr.String(), "store: embedded chDB in "+folder+" (opened here; no server answering at ") {
					t.Errorf("stderr %q does not start with the store line", stderr.String())
				}
				if folder != empty {
					if _, err := os.Stat(folder); !os.IsNotExist(err) {
						t.Errorf("the command created %s", folder)
					}
				} else if entries, _ := os.ReadDir(empty); len(entries) > 0 {
					t.Errorf("the command wrote into %s: %v", empty, entries)
				}
			})
		}
	}
}

// fakeServer answers /healthz holding the store of folder and records which
// API paths were called; /api/query answers one row.
type fakeServer struct {
	addr  string
	mu    sync.Mutex
	calls []string
}

func newFakeServer(t *testing.T, folder string) *fakeServer {
	t.Helper()
	f := &fakeServer{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			_ = json.NewEncoder(w).Encode(platform.ServerHealth{Status: "ok", Store: "embedded chDB", StoreID: platform.StoreID(folder)})
			return
		}
		f.mu.Lock()
		f.calls = append(f.calls, r.URL.Path)
		f.mu.Unlock()
		switch r.URL.Path {
		case "/api/query":
			_ = json.NewEncoder(w).Encode(store.QueryResult{Columns: []string{"x"}, Rows: [][]string{{"from the server"}}})
		case "/api/forget":
			_ = json.NewEncoder(w).Encode(forgetResponse{ForgetReport: store.ForgetReport{Requests: 1, AuditID: "audit-1"}})
		case "/api/segment-mix":
			_ = json.NewEncoder(w).Encode(segmentMixResponse{Segments: []store.SegmentCount{{Language: "en", LengthBucket: "0-127", Requests: 267}}})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	f.addr = strings.TrimPrefix(srv.URL, "http://")
	return f
}

func (f *fakeServer) called() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// TestCommandsHonourDataAndAddr: query, forget and shift go to the server on
// the configured address only when it holds the --data folder; an explicit
// --data of another folder never reaches that server (forget would erase a
// subject from the wrong store), and with --addr it is an error.
func TestCommandsHonourDataAndAddr(t *testing.T) {
	dir := t.TempDir()
	serverData, otherData := filepath.Join(dir, "server-data"), filepath.Join(dir, "other-data")
	for _, c := range []struct {
		name, path string
		args       []string
		out        string // what the server's answer prints
	}{
		{"query", "/api/query", []string{"query", "SELECT 1"}, "from the server"},
		{"forget", "/api/forget", []string{"forget", "--subject", "user-42"}, "removed: 1 requests"},
		{"shift", "/api/segment-mix", []string{"shift", "--set", "../../regression-sets/gsm8k-150.jsonl"}, "267 requests; set: 150 cases"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := newFakeServer(t, serverData)
			t.Setenv("CONDUCTOR_SHADOW_ADDR", srv.addr)
			var stdout, stderr bytes.Buffer
			// The server's own folder: through the server.
			if err := run(t.Context(), append([]string{"--data", serverData}, c.args...), &stdout, &stderr); err != nil {
				t.Fatalf("--data of the server's folder: %v", err)
			}
			if !strings.Contains(stdout.String(), c.out) || !slices.Equal(srv.called(), []string{c.path}) {
				t.Fatalf("through the server: calls %v, output %q", srv.called(), stdout.String())
			}
			if want := "store: embedded chDB in " + serverData + " (through the server at " + srv.addr + ")\n"; stderr.String() != want {
				t.Errorf("stderr %q, want %q", stderr.String(), want)
			}
			// Another folder: opened here (it holds no store, so refused), never sent.
			err := run(t.Context(), append([]string{"--data", otherData}, c.args...), io.Discard, io.Discard)
			if err == nil || !strings.Contains(err.Error(), "no store in "+otherData) {
				t.Fatalf("--data of another folder: %v, want it opened here", err)
			}
			// With --addr too: an error naming both.
			err = run(t.Context(), append([]string{"--data", otherData, "--addr", srv.addr}, c.args...), io.Discard, io.Discard)
			if err == nil || !strings.Contains(err.Error(), "not the --data folder "+otherData) {
				t.Fatalf("--data of another folder with --addr: %v", err)
			}
			if n := len(srv.called()); n != 1 {
				t.Fatalf("the server got %d API calls, want only the first command's: %v", n, srv.called())
			}
		})
	}
}

// TestSetBuildRefusesAStoreAServerHolds: set build and export rewards open
// the store themselves, so while a server holds it they say so instead of
// opening it a second time.
func TestSetBuildRefusesAStoreAServerHolds(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	srv := newFakeServer(t, data)
	t.Setenv("CONDUCTOR_SHADOW_ADDR", srv.addr)
	for _, c := range storeCommands[4:] {
		err := run(context.Background(), append([]string{"--data", data}, c.args...), io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), c.name+": the server at "+srv.addr+" holds embedded chDB in "+data) || !strings.Contains(err.Error(), "stop `serve` first") {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}
