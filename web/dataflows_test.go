package web

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/conductor-shadow/conductor-shadow/store"
	"github.com/conductor-shadow/conductor-shadow/store/dataflow"
)

// seedFlows stores an hour-old live request whose candidate run called two
// workers (one of them twice), and an OTLP exporter's counts; it returns the
// config that names one more worker and the webhook.
func seedFlows(t *testing.T, st store.Store) Config {
	t.Helper()
	ctx := context.Background()
	at := time.Now().UTC().Add(-time.Hour)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(st.InsertRequests(ctx, []store.Request{{RequestID: "flow-req", ReceivedAt: at, Source: store.SourceTap,
		Input: `[{"role":"user","content":"hi <EMAIL_0123456789abcdef>"}]`, Metadata: map[string]string{"pii_rules": "email"}}}))
	must(st.InsertRuns(ctx, []store.Run{{RunID: "flow-run", RequestID: "flow-req", Pipeline: "conductor", Mode: store.ModeCandidate, StartedAt: at, Status: store.StatusOK}}))
	var steps []store.Step
	for i, w := range []string{"conductor", "gpt-5", "gpt-5"} {
		steps = append(steps, store.Step{RunID: "flow-run", Index: int32(i), Parent: -1, Worker: w, Model: w, EndpointHost: "api.example.net",
			Attempt: 1, InputTokens: 10, OutputTokens: 5, SentBytes: 700, ReceivedBytes: 300, StartedAt: at, Status: store.StatusOK})
	}
	must(st.InsertSteps(ctx, steps))
	fw := store.NewRoles(st).FlowExportWriter
	must(fw.InsertFlowExports(ctx, []store.FlowExport{{WindowStart: at.Truncate(time.Hour), ProcessID: "p", Kind: dataflow.KindOTLP,
		Recipient: "traces", Host: "collector:4318", Items: 9, Requests: 2, SentBytes: 4096, UpdatedAt: at}}))
	cfg := NewDefaultConfig()
	cfg.DataFlows = dataflow.Settings{PIIEnabled: true, PIIRules: []string{"email"}, Configured: []dataflow.Configured{
		{Kind: dataflow.KindWorker, Name: "conductor", Host: "api.example.net"}, {Kind: dataflow.KindWorker, Name: "gpt-5", Host: "api.example.net"},
		{Kind: dataflow.KindWorker, Name: "gemma-3-27b", Host: "api.example.net"},
		{Kind: dataflow.KindOTLP, Name: "traces", Host: "collector:4318"}, {Kind: dataflow.KindWebhook, Name: "webhook", Host: "hooks.slack.com"},
	}}
	return cfg
}

// The page lists every recipient with a row of its own (a data-testid each):
// what was sent with its figures, configured ones that got nothing as such;
// a bad window is a 400 naming it.
func TestDataFlowsPage(t *testing.T) {
	st := engine.Open(t)
	h := newTestServer(t, st, seedFlows(t, st))
	rec := get(t, h, "/data-flows")
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /data-flows = %d: %s", rec.Code, rec.Body)
	}
	body := rec.Body.String()
	for _, want := range []string{
		`<tr data-testid="flow:worker:conductor@api.example.net" data-kind="worker" data-status="sent">`,
		`<tr data-testid="flow:worker:gpt-5@api.example.net" data-kind="worker" data-status="sent">`,
		`data-items="2">2 calls</td>`,
		`<tr data-testid="flow:worker:gemma-3-27b@api.example.net" data-kind="worker" data-status="configured, nothing sent">`,
		`<tr data-testid="flow:otlp:traces@collector:4318" data-kind="otlp" data-status="sent">`, `data-items="9">9 spans</td>`,
		`<tr data-testid="flow:webhook:webhook@hooks.slack.com" data-kind="webhook" data-status="configured, nothing sent">`,
		`<td data-testid="flow-pii">email 2</td>`, `class="active">Data flows</a>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if n := strings.Count(body, `<tr data-testid="flow:`); n != 5 {
		t.Errorf("%d recipient rows, want 5", n)
	}
	if rec := get(t, h, "/data-flows?since=-3h"); rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "-3h") {
		t.Errorf("since=-3h: %d %s", rec.Code, rec.Body)
	}
	if rec := get(t, h, "/data-flows?since=30m"); rec.Code != http.StatusOK || strings.Contains(rec.Body.String(), `data-items="2"`) {
		t.Errorf("the last 30 minutes hold no call: %d", rec.Code)
	}
}

// In a real browser the page renders without console errors, with every
// recipient row laid out.
func TestDataFlowsPageInBrowser(t *testing.T) {
	st := engine.Open(t)
	srv := httptest.NewServer(newTestServer(t, st, seedFlows(t, st)))
	defer srv.Close()
	ctx, log := newBrowser(t)
	load(t, ctx, log, srv.URL+"/data-flows")
	if n := count(t, ctx, `tr[data-testid^="flow:"]`); n != 5 {
		t.Errorf("%d recipient rows in the browser, want 5", n)
	}
	if w := run(t, ctx, chromedp.Evaluate[float64](`document.querySelector('[data-testid="data-flows"]').getBoundingClientRect().width`)); w <= 0 {
		t.Errorf("the table is %v px wide", w)
	}
	screenshot(t, ctx, artifactsDir(t), "data_flows_page.png")
}
