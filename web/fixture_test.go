package web

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"golang.org/x/net/html"

	"github.com/conductor-shadow/conductor-shadow/store"
)

// Payloads that must come out escaped wherever model output is shown.
const (
	xssScript = `<script>alert(1)</script>`
	xssImg    = `<img src=x onerror=alert(1)>`
)

// t0 is the fixed instant of the realistic trace.
var t0 = time.Date(2025, 6, 2, 10, 0, 0, 123_000_000, time.UTC)

// fixtureTrace is one realistic tapped request: the incumbent (a single frontier
// model), a simulated conductor run with a three-step workflow whose steps have
// different access lists, and a failed single-model candidate.
func fixtureTrace() store.Trace {
	const reqID = "req-7f3a9c"
	req := store.Request{
		RequestID: reqID, ReceivedAt: t0, Source: store.SourceTap, App: "support-bot", Category: "math",
		Input: `[{"role":"system","content":"You are a careful math tutor."},` +
			`{"role":"user","content":"A train leaves at 09:40 and arrives at 13:05.\n    How long is the trip?\n\n(show   your work)"}]`,
		InputHash: "9b1c0e4f5a6d7e8f9b1c0e4f5a6d7e8f9b1c0e4f5a6d7e8f9b1c0e4f5a6d7e8f",
		Metadata:  map[string]string{"route": "/v1/chat/completions", "tenant": "acme", "category": "math", "source": "tap"},
	}
	inc := store.Run{
		RunID: "run-inc-1", RequestID: reqID, Pipeline: "incumbent:gpt-5", PipelineVersion: "v12",
		Mode: store.ModeIncumbent, StartedAt: t0, LatencyMs: 2310, Status: store.StatusOK,
		FinalOutput: "The trip takes 3 h 25 min.", TokensIn: 64, TokensOut: 210, CostUSD: 0.00218, Calls: 1,
	}
	planRaw := "The task needs a plan, a computation and a check.\n" +
		"model_id = [2, 0, 1]\n" +
		`subtasks = ["Plan the solution", "Compute the duration", "Verify and give the final answer"]` + "\n" +
		`access_list = [[], "all", [0, 1]]`
	cond := store.Run{
		RunID: "run-cond-1", RequestID: reqID, Pipeline: "conductor", PipelineVersion: "c7b-2025-05",
		Mode: store.ModeCandidate, StartedAt: t0.Add(5 * time.Millisecond), LatencyMs: 5120.4,
		Status: store.StatusOK, FinalOutput: "3 hours 25 minutes. " + xssScript,
		TokensIn: 1430, TokensOut: 612, CostUSD: 0.02384, Calls: 4, PlanRaw: planRaw,
		Plan: `{"steps":[{"worker":"qwen3-32b","subtask":"Plan the solution","access":[]},` +
			`{"worker":"gpt-5","subtask":"Compute the duration","access":"all"},` +
			`{"worker":"claude-sonnet-4","subtask":"Verify and give the final answer","access":[0,1]}]}`,
		Simulated: true,
	}
	fail := store.Run{
		RunID: "run-single-1", RequestID: reqID, Pipeline: "single:claude-sonnet-4", PipelineVersion: "v1",
		Mode: store.ModeCandidate, StartedAt: t0.Add(5 * time.Millisecond), LatencyMs: 30000,
		Status: store.StatusError, Error: "worker claude-sonnet-4: 502 Bad Gateway", Calls: 1, Simulated: true,
	}
	step := func(i int32, worker, subtask, access, output string, in, out int64, cost, lat, ttft float64) store.Step {
		return store.Step{
			RunID: cond.RunID, Index: i, Parent: -1, Role: "worker", Worker: worker, Model: worker,
			Subtask: subtask, Access: access, Messages: "[]", InputTokens: in, OutputTokens: out, CostUSD: cost,
			StartedAt: t0.Add(time.Duration(i+1) * time.Second), LatencyMs: lat, TTFTMs: ttft,
			Status: store.StatusOK, Output: output, Attempt: 1,
		}
	}
	steps := []store.Step{
		step(0, "qwen3-32b", "Plan the solution", "[]", "1. Hours from 09:40 to 12:40.\n2. Add the minutes.", 320, 90, 0.000081, 910, 180),
		step(1, "gpt-5", "Compute the duration", `"all"`, "09:40 → 12:40 is 3 h; 12:40 → 13:05 is 25 min.", 480, 140, 0.002, 1800, 420),
		step(2, "claude-sonnet-4", "Verify and give the final answer", "[0,1]",
			"Checked. 3 hours 25 minutes.\n"+xssScript+"\n"+xssImg, 630, 382, 0.00762, 2400, 610),
	}
	steps[1].Attempt = 2
	scores := []store.Score{
		{RunID: inc.RunID, RequestID: reqID, Pipeline: inc.Pipeline, Grader: "numeric", Value: 1, Passed: true,
			Explanation: "205 min = 205 min", CreatedAt: t0.Add(time.Minute)},
		{RunID: cond.RunID, RequestID: reqID, Pipeline: cond.Pipeline, Grader: "numeric", Value: 1, Passed: true,
			Explanation: "205 min = 205 min", CreatedAt: t0.Add(time.Minute)},
	}
	return store.Trace{Request: req, Runs: []store.Run{inc, cond, fail}, Steps: steps, Scores: scores}
}

// fixtureSuiteRun is a finished suite run with a Markdown report holding a table,
// raw HTML and a javascript: link (the last two must not survive sanitizing).
func fixtureSuiteRun() store.SuiteRun {
	return store.SuiteRun{
		SuiteRunID: "sr-20250602-0001", SetName: "gsm8k-mini",
		SetVersion: "4e1f2a9b7c3d5e6f4e1f2a9b7c3d5e6f4e1f2a9b7c3d5e6f4e1f2a9b7c3d5e6f",
		Incumbent:  "incumbent:gpt-5", Candidates: []string{"conductor", "moa:3"},
		StartedAt: t0.Add(time.Hour), FinishedAt: t0.Add(time.Hour + 4*time.Minute), Status: "done", Cases: 50,
		Headline: "conductor: +6.0 pts quality, −38% cost/request, p95 +1.9 s (simulated)",
		ReportMarkdown: "# Suite run report\n\n| pipeline | accuracy | cost/request USD |\n|:--|--:|--:|\n" +
			"| incumbent:gpt-5 | 0.86 | 0.0042 |\n| conductor | 0.92 | 0.0026 |\n\n" +
			"<script>alert(1)</script>\n\n[click](javascript:alert(1)) and **bold**\n",
		ReportJSON: `{"suite_run_id":"sr-20250602-0001","simulated":true,"gates":{"quality":"pass"}}`,
	}
}

// fixtureOlderSuiteRun is a suite run still running, started a day before
// fixtureSuiteRun, with no report yet.
func fixtureOlderSuiteRun() store.SuiteRun {
	return store.SuiteRun{SuiteRunID: "sr-20250601-0007", SetName: "mmlu-mini", SetVersion: "ab12cd34ef56",
		Incumbent: "incumbent:gpt-5", Candidates: []string{"conductor"}, StartedAt: t0.Add(-24 * time.Hour),
		Status: "running", Cases: 20}
}

// seed writes a trace into st.
func seed(t *testing.T, st store.Store, tr store.Trace) {
	t.Helper()
	ctx := context.Background()
	if err := st.InsertRequests(ctx, []store.Request{tr.Request}); err != nil {
		t.Fatal(err)
	}
	if err := st.InsertRuns(ctx, tr.Runs); err != nil {
		t.Fatal(err)
	}
	if err := st.InsertSteps(ctx, tr.Steps); err != nil {
		t.Fatal(err)
	}
	if err := st.InsertScores(ctx, tr.Scores); err != nil {
		t.Fatal(err)
	}
}

// newTestServer registers the UI over st on a fresh gin engine in test mode.
func newTestServer(t *testing.T, st store.Store, cfg Config) *gin.Engine {
	t.Helper()
	gin.SetMode(gin.TestMode)
	r := gin.New()
	if err := Register(r, ReadersOf(store.NewRoles(st)), cfg); err != nil {
		t.Fatalf("Register: %v", err)
	}
	return r
}

// get performs a GET on h.
func get(t *testing.T, h http.Handler, target string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
	return rec
}

// parseHTML parses a response body.
func parseHTML(t *testing.T, body string) *html.Node {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parse HTML: %v", err)
	}
	return doc
}

// byTestID returns the elements under n whose data-testid is id, in document order.
func byTestID(n *html.Node, id string) []*html.Node {
	return findAll(n, func(n *html.Node) bool { return n.Type == html.ElementNode && attr(n, "data-testid") == id })
}

// byTag returns the elements under n named tag, in document order.
func byTag(n *html.Node, tag string) []*html.Node {
	return findAll(n, func(n *html.Node) bool { return n.Type == html.ElementNode && n.Data == tag })
}

// findAll returns the nodes under n (n included) that match, in document order.
func findAll(n *html.Node, match func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if match(n) {
			out = append(out, n)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return out
}

// attr returns n's attribute key, "" when absent.
func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

// text returns the text content of n with runs of whitespace collapsed.
func text(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return strings.Join(strings.Fields(b.String()), " ")
}

// rawText returns the text content of n as is (for <pre>).
func rawText(n *html.Node) string {
	var b strings.Builder
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.TextNode {
			b.WriteString(c.Data)
		}
	}
	return b.String()
}

func mustStatus(t *testing.T, rec *httptest.ResponseRecorder, want int) {
	t.Helper()
	if rec.Code != want {
		t.Fatalf("status = %d, want %d; body:\n%s", rec.Code, want, limitText(rec.Body.String(), 2000))
	}
}

func limitText(s string, n int) string {
	if len(s) > n {
		return s[:n] + fmt.Sprintf("… (%d bytes)", len(s))
	}
	return s
}

// renderNode renders n back to HTML.
func renderNode(t *testing.T, n *html.Node) string {
	t.Helper()
	var b strings.Builder
	if err := html.Render(&b, n); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
