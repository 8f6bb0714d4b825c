package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/cmd/internal/platform"
	"github.com/conductor-shadow/conductor-shadow/eval"
	"github.com/conductor-shadow/conductor-shadow/store"
	"github.com/conductor-shadow/conductor-shadow/store/storetest"
)

// On a running serve the review page's writes pass the server's guards —
// JSON only, same origin, the server's own host name — and land in the
// reviews table; `review export` goes through the server that holds the
// embedded store and writes the labelled pair, as GET /api/review/export
// does.
func TestServeReviewAndExport(t *testing.T) {
	storetest.RequireEngine(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	addr, dir := freeAddr(t), t.TempDir()
	cfgPath := filepath.Join(dir, "config.yaml")
	writeFile(t, cfgPath, "web:\n  review:\n    sample_share: 1\n")
	env := map[string]string{"CONDUCTOR_SHADOW_ADDR": addr, "CONDUCTOR_SHADOW_DATA": filepath.Join(dir, "data")}
	for k, v := range env {
		t.Setenv(k, v)
	}
	t.Setenv("CONDUCTOR_SHADOW_PII_SECRET", "pii-key-for-the-review-test")

	// One judged suite pair, stored before serve takes the store.
	cfg, err := platform.LoadConfig(cfgPath, env)
	if err != nil {
		t.Fatal(err)
	}
	st, _, err := platform.OpenStore(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	seedErr := func() error {
		if err := st.InsertRequests(ctx, []store.Request{{RequestID: "sr-1/c1", ReceivedAt: at, Source: store.SourceSuite, Input: `[{"role":"user","content":"Capital of France?"}]`}}); err != nil {
			return err
		}
		if err := st.InsertRuns(ctx, []store.Run{
			{RunID: "sr-1/c1/inc", RequestID: "sr-1/c1", SuiteRunID: "sr-1", Pipeline: "single:gpt-5", Mode: store.ModeIncumbent, Status: store.StatusOK, StartedAt: at, FinalOutput: "Paris."},
			{RunID: "sr-1/c1/cand", RequestID: "sr-1/c1", SuiteRunID: "sr-1", Pipeline: "conductor", Mode: store.ModeCandidate, Status: store.StatusOK, StartedAt: at, FinalOutput: "Lyon."}}); err != nil {
			return err
		}
		return store.NewRoles(st).JudgmentWriter.InsertJudgments(ctx, []store.Judgment{{RequestID: "sr-1/c1", SuiteRunID: "sr-1", Pipeline: "conductor",
			CandidateRunID: "sr-1/c1/cand", IncumbentPipeline: "single:gpt-5", IncumbentRunID: "sr-1/c1/inc", Judge: "claude-sonnet-4",
			Outcome: store.JudgmentLoss, Verdict1: store.VerdictIncumbent, Verdict2: store.VerdictIncumbent, JudgedAt: at, InclusionProb: 1}})
	}()
	if cerr := st.Close(); seedErr != nil || cerr != nil {
		t.Fatal(seedErr, cerr)
	}

	serveDone := make(chan error, 1)
	go func() { serveDone <- run(ctx, []string{"--config", cfgPath, "serve"}, io.Discard, io.Discard) }()
	base := "http://" + addr
	waitHTTP(t, base+"/healthz", serveDone)

	post := func(path, body string, header map[string]string) *http.Response {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		for k, v := range header {
			if k == "Host" {
				req.Host = v
			} else {
				req.Header.Set(k, v)
			}
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	want := func(resp *http.Response, code int, what string) {
		t.Helper()
		if resp.StatusCode != code {
			t.Errorf("%s: %d, want %d", what, resp.StatusCode, code)
		}
	}
	want(post("/review/reviewer", `{"name":"ada"}`, map[string]string{"Origin": "http://evil.example"}), http.StatusForbidden, "cross-site name")
	want(post("/review/reviewer", `name=ada`, map[string]string{"Content-Type": "application/x-www-form-urlencoded"}), http.StatusUnsupportedMediaType, "form body")
	resp := post("/review/reviewer", `{"name":"ada"}`, map[string]string{"Origin": base, "Sec-Fetch-Site": "same-origin"})
	want(resp, http.StatusOK, "same-origin name")
	var cookie string
	for _, c := range resp.Cookies() {
		cookie = c.Name + "=" + c.Value
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/review", nil)
	req.Header.Set("Cookie", cookie)
	page, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	html, _ := io.ReadAll(page.Body)
	page.Body.Close()
	m := regexp.MustCompile(`data-token="([^"]+)"`).FindSubmatch(html)
	if m == nil || strings.Contains(string(html), "single:gpt-5") || !strings.Contains(page.Header.Get("Content-Security-Policy"), "script-src 'self'") {
		t.Fatalf("review page %d: %s", page.StatusCode, html)
	}
	label := `{"token":"` + string(m[1]) + `","choice":"T"}`
	want(post("/review/labels", label, map[string]string{"Cookie": cookie, "Host": "attacker.example"}), http.StatusMisdirectedRequest, "rebinding host")
	want(post("/review/labels", label, map[string]string{"Cookie": cookie, "Sec-Fetch-Site": "cross-site"}), http.StatusForbidden, "cross-site label")
	want(post("/review/labels", label, map[string]string{"Cookie": cookie, "Sec-Fetch-Site": "same-origin", "Origin": base}), http.StatusOK, "label")

	// Through the server that holds the embedded store.
	out := filepath.Join(dir, "reviewed.jsonl")
	cli(t, ctx, cfgPath, "review", "export", "--out", out)
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var p eval.LabelledPair
	if lines := strings.Split(strings.TrimSpace(string(raw)), "\n"); len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &p) != nil {
		t.Fatalf("export %q", raw)
	}
	if p.Answers != [2]string{"Paris.", "Lyon."} || len(p.Labels) != 1 || p.Labels[0].Label != store.VerdictTie ||
		len(p.Judges) != 1 || p.Judges[0].Outcome != store.JudgmentLoss || p.Set != "" {
		t.Errorf("exported pair %+v", p)
	}
	api, err := http.Get(base + reviewExportPath + "?suite_run=sr-1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(api.Body)
	api.Body.Close()
	if api.StatusCode != http.StatusOK || api.Header.Get("Content-Type") != "application/x-ndjson" || strings.Count(string(body), "\n") != 1 ||
		api.Trailer.Get(trailerPairs) != "1" || api.Trailer.Get(trailerSkipped) != "0" {
		t.Errorf("GET %s: %d %q, trailers %v", reviewExportPath, api.StatusCode, body, api.Trailer)
	}
	cancel()
	select {
	case err := <-serveDone:
		if err != nil {
			t.Errorf("serve stopped with %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}
	// No server answering: the command opens the store itself.
	if got := cli(t, context.Background(), cfgPath, "review", "export", "--suite-run", "sr-1"); strings.Count(got, "\n") != 1 || !strings.Contains(got, `"Lyon."`) {
		t.Errorf("export without a server: %q", got)
	}
	if got := cli(t, context.Background(), cfgPath, "review", "export", "--live"); got != "" {
		t.Errorf("live export of a store without live reviews: %q", got)
	}
}
