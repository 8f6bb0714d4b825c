package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/store/storetest"
)

// syncBuffer is a bytes.Buffer safe for the server's logger and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestServeRefusesAttacks runs `serve` on the real embedded store with the
// default settings (loopback) and tries each attack of a caller who can reach
// the API or make the operator's browser send requests: every one fails, the
// schema is still whole afterwards, the secrets are not in the environment or
// any answer, and a runaway console query ends on a limit while pages answer.
func TestServeRefusesAttacks(t *testing.T) {
	storetest.RequireEngine(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var hits atomic.Int64
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprintln(w, "1")
	}))
	defer target.Close()

	addr := freeAddr(t)
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "config.yaml")
	// The server's regression sets: a good one (suite.set) and a broken one
	// beside it; a secret outside, and a link to it planted among the sets.
	setsDir := filepath.Join(dir, "sets")
	if err := os.Mkdir(setsDir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(setsDir, "demo.jsonl"), `{"id":"d-1","input":"2+2?","reference":"4","grader":"numeric"}`+"\n")
	writeFile(t, filepath.Join(setsDir, "broken.jsonl"), `{"id":"b-1"} cSECRETc`+"\n")
	secretFile := filepath.Join(dir, "pii.key")
	writeFile(t, secretFile, "cSECRET-KEY-MATERIAL\n")
	if err := os.Symlink(secretFile, filepath.Join(setsDir, "leak.jsonl")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, cfgPath, "server:\n  allowed_hosts: [shadow.corp.example]\nstore:\n  embedded_console_timeout: 2s\nsuite:\n  set: "+filepath.Join(setsDir, "demo.jsonl")+"\n")
	const token, piiKey = "api-token-5f1e0c", "pii-key-9a7b3d"
	t.Setenv("CONDUCTOR_SHADOW_ADDR", addr)
	t.Setenv("CONDUCTOR_SHADOW_DATA", filepath.Join(dir, "data"))
	t.Setenv("CONDUCTOR_SHADOW_API_TOKEN", token)
	t.Setenv("CONDUCTOR_SHADOW_PII_SECRET", piiKey)
	logs := &syncBuffer{}
	serveDone := make(chan error, 1)
	go func() { serveDone <- run(ctx, []string{"--config", cfgPath, "serve"}, io.Discard, logs) }()
	waitHTTP(t, "http://"+addr+"/healthz", serveDone)
	base := "http://" + addr

	for _, name := range []string{"CONDUCTOR_SHADOW_API_TOKEN", "CONDUCTOR_SHADOW_PII_SECRET"} {
		if v, ok := os.LookupEnv(name); ok {
			t.Errorf("$%s is still in the environment after start (%q)", name, v)
		}
	}

	do := func(method, path string, body string, header map[string]string) reply {
		t.Helper()
		a := ask(t, method, base+path, body, header)
		if strings.Contains(a.body, token) || strings.Contains(a.body, piiKey) {
			t.Errorf("%s %s: the answer shows a secret: %s", method, path, a.body)
		}
		return a
	}
	query := func(sql string, header map[string]string) reply {
		t.Helper()
		body, _ := json.Marshal(queryRequest{SQL: sql})
		h := map[string]string{"Content-Type": "application/json"}
		for k, v := range header {
			h[k] = v
		}
		return do("POST", "/api/query", string(body), h)
	}
	schemaWhole := func(after string) {
		t.Helper()
		a := query("SELECT count() FROM system.tables WHERE database = currentDatabase() AND name IN ('requests','runs','steps','scores','suite_runs','cases')", nil)
		if a.status != 200 || !strings.Contains(a.body, `[["6"]]`) {
			t.Fatalf("after %s: schema check answered %d %s; want the 6 tables", after, a.status, a.body)
		}
		if p := do("GET", "/traces", "", nil); p.status != 200 {
			t.Fatalf("after %s: GET /traces answered %d", after, p.status)
		}
	}

	// The console: each row of the attack table, and variants.
	for _, sql := range []string{
		"SELECT $$'$$; DROP TABLE shadow.runs; --'",
		"SELECT $$'$$; INSERT INTO shadow.runs (run_id) VALUES ('x'); --'",
		"SELECT $$'$$; CREATE TABLE shadow.evil (x UInt8) ENGINE = Memory; --'",
		"SELECT $q$'$q$; DROP TABLE runs; --'",
		"SELECT file('/proc/self/environ')",
		"SELECT file('/etc/passwd')",
		"SELECT * FROM file('/proc/self/environ', 'LineAsString')",
		"SELECT * APPLY(file) FROM (SELECT '/proc/self/environ' AS p)",
		"DESCRIBE url('" + target.URL + "/x', 'CSV')",
		"SELECT * FROM url('" + target.URL + "/x', 'LineAsString')",
		"SELECT * FROM remote('" + strings.TrimPrefix(target.URL, "http://") + "', system.one)",
		"SELECT 1 SETTINGS readonly = 0",
		"SELECT 1 INTO OUTFILE '" + filepath.Join(dir, "out.csv") + "'",
		"SELECT getSetting('readonly')",
		"SELECT * FROM system.users",
	} {
		a := query(sql, nil)
		if a.status != http.StatusBadRequest && a.status != http.StatusUnprocessableEntity {
			t.Errorf("query %q answered %d %s; want 400 or 422", sql, a.status, a.body)
		}
		if strings.Contains(a.body, "root:") || strings.Contains(a.body, "PATH=") {
			t.Errorf("query %q shows file contents: %s", sql, a.body)
		}
		schemaWhole(sql)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the engine sent %d HTTP request(s) to the target", n)
	}
	if _, err := os.Stat(filepath.Join(dir, "out.csv")); err == nil {
		t.Error("INTO OUTFILE wrote a file")
	}

	// The browser: DNS rebinding and cross-site requests.
	tap := `{"request":{"model":"m","messages":[{"role":"user","content":"hi"}]}}`
	for _, tc := range []struct {
		name, method, path, body string
		header                   map[string]string
		want                     int
	}{
		{"rebinding api", "POST", "/api/query", `{"sql":"SELECT 1"}`, map[string]string{"Host": "attacker.example", "Content-Type": "application/json"}, 421},
		{"rebinding page", "GET", "/traces", "", map[string]string{"Host": "attacker.example:" + strings.Split(addr, ":")[1]}, 421},
		{"csrf query", "POST", "/api/query", `{"sql":"SELECT 1"}`, map[string]string{"Content-Type": "text/plain", "Origin": "http://evil.example"}, 403},
		{"csrf tap", "POST", "/v1/tap", tap, map[string]string{"Content-Type": "text/plain", "Origin": "http://evil.example"}, 403},
		{"csrf batch", "POST", "/v1/tap/batch", "[" + tap + "]", map[string]string{"Content-Type": "text/plain", "Sec-Fetch-Site": "cross-site"}, 403},
		{"csrf suite run", "POST", "/api/suite-runs", `{"limit":1}`, map[string]string{"Content-Type": "application/json", "Origin": "http://evil.example"}, 403},
		{"text/plain without origin", "POST", "/api/query", `{"sql":"SELECT 1"}`, map[string]string{"Content-Type": "text/plain"}, 415},
		{"configured name", "POST", "/api/query", `{"sql":"SELECT 1"}`, map[string]string{"Host": "shadow.corp.example", "Content-Type": "application/json"}, 200},
	} {
		if a := do(tc.method, tc.path, tc.body, tc.header); a.status != tc.want {
			t.Errorf("%s: %s %s answered %d %s; want %d", tc.name, tc.method, tc.path, a.status, a.body, tc.want)
		}
	}

	// The suite-run API opens only the server's regression sets and never
	// repeats a file's bytes.
	for _, tc := range []struct {
		name, body string
		want       []string // substrings of the 400 answer
	}{
		{"file outside the sets", `{"set":"` + secretFile + `"}`, []string{"not allowed", "by name: broken, demo ("}},
		{"process environment", `{"set":"/proc/self/environ"}`, []string{"not allowed"}},
		{"dot-dot out of the sets", `{"set":"` + setsDir + `/../pii.key"}`, []string{"not allowed"}},
		{"relative dot-dot", `{"set":"../pii.key"}`, []string{"not allowed"}},
		{"link among the sets", `{"set":"leak"}`, []string{"not allowed"}},
		{"link by path", `{"set":"` + filepath.Join(setsDir, "leak.jsonl") + `"}`, []string{"not allowed"}},
		{"unknown name", `{"set":"nosuch"}`, []string{"not allowed", "demo"}},
		{"broken set of the server", `{"set":"broken"}`, []string{"malformed JSON at byte"}},
		{"negative limit", `{"set":"demo","limit":-3}`, []string{"limit -3"}},
	} {
		a := do("POST", "/api/suite-runs", tc.body, map[string]string{"Content-Type": "application/json"})
		if a.status != http.StatusBadRequest {
			t.Errorf("suite run, %s: answered %d %s; want 400", tc.name, a.status, a.body)
		}
		for _, w := range tc.want {
			if !strings.Contains(a.body, w) {
				t.Errorf("suite run, %s: answer %s lacks %q", tc.name, a.body, w)
			}
		}
		for _, leak := range []string{"SECRET", "invalid character", "PATH=", "CONDUCTOR_SHADOW"} {
			if strings.Contains(a.body, leak) {
				t.Errorf("suite run, %s: answer shows file content %q: %s", tc.name, leak, a.body)
			}
		}
	}

	// Unauthenticated answers name no folder of the server.
	for _, tc := range []struct{ path, host string }{
		{"/healthz", ""}, {"/healthz", "attacker.example"}, {"/readyz", ""},
	} {
		a := do("GET", tc.path, "", map[string]string{"Host": tc.host}) // "": the address's own
		if a.status != http.StatusOK || strings.Contains(a.body, dir) || strings.Contains(a.body, "store_path") {
			t.Errorf("GET %s (Host %q) answered %d %s; want 200 without a folder", tc.path, tc.host, a.status, a.body)
		}
	}

	// A runaway console query ends on a limit; pages answer meanwhile.
	start := time.Now()
	runaway := make(chan reply, 1)
	go func() { runaway <- query("SELECT count() FROM system.numbers", nil) }()
	time.Sleep(20 * time.Millisecond)
	pageStart := time.Now()
	if p := do("GET", "/traces", "", nil); p.status != 200 {
		t.Errorf("GET /traces during a runaway query answered %d", p.status)
	}
	pageTook := time.Since(pageStart)
	a := <-runaway
	t.Logf("runaway query refused after %v; a page during it answered in %v", time.Since(start).Round(time.Millisecond), pageTook.Round(time.Millisecond))
	if a.status != http.StatusUnprocessableEntity || !strings.Contains(a.body, "TOO_MANY_ROWS") && !strings.Contains(a.body, "TIMEOUT_EXCEEDED") {
		t.Errorf("runaway query answered %d %s; want 422 with the engine's limit", a.status, a.body)
	}
	schemaWhole("the runaway query")

	// A statement that passes every console rule but is one call the engine
	// may not interrupt (hasAll comparing every pair of 200,000 elements): it
	// runs in its console worker, a tap copy is accepted and a page answers
	// while it runs, and it is ended at the 2 s time limit (the worker is
	// killed there, unless the engine's own timeout got to it first).
	const bomb = "SELECT hasAll(a, arrayMap(x -> x + 1, a)) FROM (SELECT groupArray(number) AS a FROM numbers(200000))"
	bombDone := make(chan reply, 1)
	go func() { bombDone <- query(bomb, nil) }()
	time.Sleep(300 * time.Millisecond) // in its worker by now
	copyBody := `{"request_id":"bomb-1","request":{"model":"gpt-5","messages":[{"role":"user","content":"hi"}]},"response":{"model":"gpt-5","content":"hello","latency_ms":100,"usage":{"prompt_tokens":10,"completion_tokens":2}}}`
	tapAnswer := do("POST", "/v1/tap", copyBody, map[string]string{"Content-Type": "application/json"})
	pageAnswer := do("GET", "/traces", "", nil)
	select {
	case a := <-bombDone:
		t.Errorf("the bomb answered (%d %s) before a tap copy and a page made while it ran", a.status, a.body)
		bombDone <- a
	default:
	}
	if tapAnswer.status != http.StatusAccepted || pageAnswer.status != http.StatusOK {
		t.Errorf("while the bomb ran: tap %d %s, /traces %d; want 202 and 200", tapAnswer.status, tapAnswer.body, pageAnswer.status)
	}
	if a := <-bombDone; a.status != http.StatusUnprocessableEntity ||
		!strings.Contains(a.body, "ran to the console's time limit and was ended") && !strings.Contains(a.body, "TIMEOUT_EXCEEDED") {
		t.Errorf("the bomb answered %d %s; want 422 saying it was ended at the time limit", a.status, a.body)
	}
	if a := query("SELECT count() FROM requests", nil); a.status != 200 || !strings.Contains(a.body, `"snapshot_at"`) || !strings.Contains(a.body, `"snapshot_age_ms"`) {
		t.Errorf("a console answer = %d %s; want it to say how fresh its snapshot is", a.status, a.body)
	}
	for _, want := range []string{"console query started", "hasAll(a, arrayMap", "outcome=ended", "console query", "TOO_MANY_ROWS", "only read-only statements", "attacker.example", "evil.example"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the log lacks %q", want)
		}
	}
	if strings.Contains(logs.String(), token) || strings.Contains(logs.String(), piiKey) {
		t.Error("the log shows a secret")
	}

	cancel()
	select {
	case err := <-serveDone:
		if err != nil {
			t.Fatalf("serve stopped with %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}
}
