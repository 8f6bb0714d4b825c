package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/store/storetest"
)

// TestMainJobEndToEnd runs the product as `make run` does, in one process: the
// simulated pool, `serve` on the real embedded store, `replay` of real recorded
// exchanges through the tap, `query` through the server (the embedded engine has
// one owner), a `suite run`, and the three web pages.
func TestMainJobEndToEnd(t *testing.T) {
	storetest.RequireEngine(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()

	pool := simulatedPool(t, 0)

	addr := freeAddr(t)
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "config.yaml")
	reports := filepath.Join(dir, "reports")
	writeFile(t, cfgPath, "suite:\n  set: ../../regression-sets/gsm8k-150.jsonl\n  report_dir: "+reports+"\n  concurrency: 4\ningest:\n  workers: 8\nwriter:\n  flush_interval: 50ms\n")
	t.Setenv("CONDUCTOR_SHADOW_ADDR", addr)
	t.Setenv("CONDUCTOR_SHADOW_DATA", filepath.Join(dir, "data"))
	t.Setenv("CONDUCTOR_SHADOW_POOL_URL", pool.URL+"/v1")

	serveDone := make(chan error, 1)
	go func() { serveDone <- run(ctx, []string{"--config", cfgPath, "serve"}, io.Discard, io.Discard) }()
	waitHTTP(t, "http://"+addr+"/healthz", serveDone)

	// 6 real exchanges: GSM8K questions with GPT-4-1106's recorded answers and real
	// user prompts without one (the incumbent answers them, simulated).
	replayFile := filepath.Join(dir, "replay.jsonl")
	ids := subsetReplay(t, "../../regression-sets/replay/production-350.jsonl", replayFile, 3, 3)
	out := cli(t, ctx, cfgPath, "replay", replayFile)
	// A copy the tap could not confirm in time (503, "sending it again is
	// safe") is retried and then answered as a duplicate: accepted either way.
	if !strings.Contains(out, "6 lines: 6 sent, 6 accepted (") || !strings.Contains(out, "0 refused, 0 failed, 0 not sent; 3 incumbent answers fetched") {
		t.Fatalf("replay said %q", out)
	}
	// Replaying again is harmless: the tap answers duplicates (a copy the
	// first replay saw refused as unconfirmed may be queued now).
	if out := cli(t, ctx, cfgPath, "replay", replayFile); !strings.Contains(out, "6 lines: 6 sent, 6 accepted (") || !strings.Contains(out, "0 refused, 0 failed, 0 not sent") {
		t.Fatalf("second replay said %q", out)
	}

	const q = "SELECT countIf(mode = 'incumbent'), countIf(mode = 'candidate') FROM runs FINAL"
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := lastLine(cli(t, ctx, cfgPath, "query", q))
		if got == "6\t6" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("runs stored: %q, want 6 incumbent and 6 candidate", got)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got := lastLine(cli(t, ctx, cfgPath, "query", "SELECT min(c) FROM (SELECT run_id, count() AS c FROM steps FINAL GROUP BY run_id)")); got < "1" {
		t.Fatalf("every run must have at least one step, min = %q", got)
	}
	if _, err := cliErr(ctx, cfgPath, "query", "DROP TABLE runs"); err == nil || !strings.Contains(err.Error(), "read") {
		t.Fatalf("a DROP through the API must be refused as not read-only, got %v", err)
	}

	// The progress of a suite run through the server streams back (NDJSON)
	// and is drawn on stderr; stdout keeps the report's summary.
	var stdout, stderr bytes.Buffer
	if err := run(ctx, []string{"--config", cfgPath, "suite", "run", "--set", "../../regression-sets/gsm8k-150.jsonl", "--limit", "4", "--progress"}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	out = stdout.String()
	if e := stderr.String(); !strings.HasPrefix(e, "store: embedded chDB in "+filepath.Join(dir, "data")+" (through the server at "+addr+")\n") ||
		!strings.Contains(e, "4/4") || !strings.Contains(e, "100%") || strings.Contains(out, "4/4") {
		t.Fatalf("suite run through the server: stderr %q (want the store line and a bar to 4/4), stdout %q", e, out)
	}
	for _, want := range []string{"gsm8k-150 (4 cases, SIMULATED workers)", "conductor", "single:gpt-5", "cost/request", "p95"} {
		if !strings.Contains(out, want) {
			t.Fatalf("suite run output lacks %q:\n%s", want, out)
		}
	}
	if want := "store: embedded chDB in " + filepath.Join(dir, "data") + " (through the server at " + addr + ")"; !strings.Contains(out, want) {
		t.Fatalf("suite run output does not say which store it used (%q):\n%s", want, out)
	}
	// An explicit --data naming another folder is never sent to the server that
	// answers on the configured address: it is opened here, and as it holds no
	// store it is refused, by name.
	other := filepath.Join(dir, "other-data")
	if _, err := cliErr(ctx, cfgPath, "--data", other, "suite", "run", "--set", "../../regression-sets/gsm8k-150.jsonl", "--limit", "1"); err == nil || !strings.Contains(err.Error(), "no store in "+other) {
		t.Fatalf("suite run --data %s: %v, want the store at %s opened here", other, err, other)
	}
	// --addr where nothing listens is an error, not a silent local run.
	if nobody := freeAddr(t); func() bool {
		_, err := cliErr(ctx, cfgPath, "--addr", nobody, "suite", "run", "--limit", "1")
		return err == nil || !strings.Contains(err.Error(), "no server answering at "+nobody+" (--addr "+nobody+")")
	}() {
		t.Fatal("suite run --addr <nothing> did not say nothing answers there")
	}
	// shift while serve holds the store: the live mix comes from the server,
	// not from a new empty store (replayed copies keep their recorded time).
	if out := cli(t, ctx, cfgPath, "shift", "--set", "../../regression-sets/gsm8k-150.jsonl", "--window", "87600h"); !strings.Contains(out, ": 6 requests; set: 150 cases") {
		t.Fatalf("shift through the server said %q", out)
	}
	// forget never erases from a store the flags did not name.
	if _, err := cliErr(ctx, cfgPath, "--data", other, "--addr", addr, "forget", "--subject", "user-42"); err == nil || !strings.Contains(err.Error(), "not the --data folder "+other) {
		t.Fatalf("forget --data %s --addr %s: %v", other, addr, err)
	}
	if got := lastLine(cli(t, ctx, cfgPath, "query", "SELECT count() FROM suite_runs FINAL")); got != "1" {
		t.Fatalf("the server's store holds %s suite runs, want 1", got)
	}
	mds, _ := filepath.Glob(filepath.Join(reports, "*.md"))
	if len(mds) != 1 {
		t.Fatalf("want one Markdown report in %s, got %v", reports, mds)
	}
	md, _ := os.ReadFile(mds[0])
	for _, want := range []string{"p50 latency (ms)", "p95 latency (ms)", "cost/request (USD)", "calls/request", "By category", "math_word_problem"} {
		if !bytes.Contains(md, []byte(want)) {
			t.Errorf("report lacks %q", want)
		}
	}

	if body := get(t, "http://"+addr+"/readyz"); !strings.Contains(body, `"status":"ready"`) {
		t.Errorf("/readyz of a healthy server = %s", body)
	}
	suiteID := lastLine(cli(t, ctx, cfgPath, "query", "SELECT suite_run_id FROM suite_runs FINAL"))
	for path, want := range map[string]string{
		"/traces":                    ids[0],
		"/traces/" + ids[0]:          "incumbent:gpt-4-1106-preview",
		"/traces/" + ids[len(ids)-1]: "access-cell",
		"/suite-runs":                suiteID,
		"/suite-runs/" + suiteID:     "single:gpt-5",
	} {
		body := get(t, "http://"+addr+path)
		if !strings.Contains(body, want) {
			t.Errorf("GET %s: page lacks %q", path, want)
		}
	}

	checkOverviewScreen(t, "http://"+addr)

	cancel()
	select {
	case err := <-serveDone:
		if err != nil {
			t.Fatalf("serve stopped with %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop after its context ended")
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func waitHTTP(t *testing.T, url string, failed <-chan error) {
	t.Helper()
	// A generous bound: a fresh store migrates at start, and the process tests
	// start several servers side by side on a machine the suite shares.
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-failed:
			t.Fatalf("serve stopped before answering: %v", err)
		default:
		}
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s did not answer", url)
}

func cli(t *testing.T, ctx context.Context, cfgPath string, args ...string) string {
	t.Helper()
	out, err := cliErr(ctx, cfgPath, args...)
	if err != nil {
		t.Fatalf("conductor-shadow %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func cliErr(ctx context.Context, cfgPath string, args ...string) (string, error) {
	var stdout bytes.Buffer
	err := run(ctx, append([]string{"--config", cfgPath}, args...), &stdout, io.Discard)
	return stdout.String(), err
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d", url, resp.StatusCode)
	}
	return string(body)
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// subsetReplay copies the first withAnswer lines that carry an incumbent answer
// and the first without lines that do not, and returns their request ids.
func subsetReplay(t *testing.T, src, dst string, withAnswer, without int) []string {
	t.Helper()
	f, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out bytes.Buffer
	var ids []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() && (withAnswer > 0 || without > 0) {
		line := sc.Text()
		has := strings.Contains(line, `"response":`)
		switch {
		case has && withAnswer > 0:
			withAnswer--
		case !has && without > 0:
			without--
		default:
			continue
		}
		id := line[strings.Index(line, `"request_id":"`)+len(`"request_id":"`):]
		ids = append(ids, id[:strings.Index(id, `"`)])
		out.WriteString(line + "\n")
	}
	writeFile(t, dst, out.String())
	return ids
}
