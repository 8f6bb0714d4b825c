package eval_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/eval"
	"github.com/conductor-shadow/conductor-shadow/eval/judge"
	"github.com/conductor-shadow/conductor-shadow/shadow"
	"github.com/conductor-shadow/conductor-shadow/shadow/simpool"
	"github.com/conductor-shadow/conductor-shadow/store"
	"github.com/conductor-shadow/conductor-shadow/store/dataflow"
)

// modelCounter counts the chat requests a worker endpoint received, per
// model asked for, with their body bytes.
type modelCounter struct {
	next  http.Handler
	mu    sync.Mutex
	calls map[string]int64
	bytes map[string]int64
}

func (m *modelCounter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Model string `json:"model"`
	}
	_ = json.Unmarshal(body, &req)
	m.mu.Lock()
	m.calls[req.Model]++
	m.bytes[req.Model] += int64(len(body))
	m.mu.Unlock()
	r.Body = io.NopCloser(bytes.NewReader(body))
	m.next.ServeHTTP(w, r)
}

// A suite report's data-flows section lists what the suite run sent, as the
// worker endpoint counted it: the incumbent's and the candidate's workers
// and the judge (pairwise cases, rubric cases, canaries), each with its
// calls and request bytes; a configured worker nobody called is "configured,
// nothing sent".
func TestSuiteReportDataFlowsSection(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	setPath := filepath.Join(dir, "flows.jsonl")
	lines := `{"id":"n1","category":"math","input":"What is 6*7?","reference":"42","grader":"numeric"}
{"id":"n2","category":"math","input":"What is 2+2?","reference":"4","grader":"numeric"}
{"id":"p1","category":"chat","input":"Write a haiku about rain.","grader":"pairwise"}
{"id":"r1","category":"chat","input":"Explain photosynthesis in one sentence.","reference":"Plants turn light into sugar.","grader":"judge","rubric_scale":[1,10]}
`
	if err := os.WriteFile(setPath, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	set, err := eval.LoadSet(setPath)
	if err != nil {
		t.Fatal(err)
	}
	scfg := simpool.NewDefaultConfig()
	scfg.LatencyScale, scfg.MalformedPlanProb = 0, 0
	sim, err := simpool.New(scfg)
	if err != nil {
		t.Fatal(err)
	}
	counter := &modelCounter{next: sim, calls: map[string]int64{}, bytes: map[string]int64{}}
	srv := httptest.NewServer(counter)
	defer srv.Close()
	cfg := shadow.NewDefaultConfig()
	for i := range cfg.Workers {
		cfg.Workers[i].BaseURL = srv.URL + "/v1"
	}
	pool, err := shadow.NewPool(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	inc, err := shadow.NewSingle(pool, "gpt-5")
	if err != nil {
		t.Fatal(err)
	}
	cand, err := shadow.NewSingle(pool, "qwen3-32b")
	if err != nil {
		t.Fatal(err)
	}
	jcfg := judge.NewDefaultConfig()
	jcfg.Worker = "claude-sonnet-4"
	graders, err := judge.Graders(pool, jcfg, eval.NewDefaultCodeConfig())
	if err != nil {
		t.Fatal(err)
	}
	roles := store.NewRoles(eval.OpenTestStore(t))
	host := strings.TrimPrefix(srv.URL, "http://")
	settings := dataflow.Settings{PIIEnabled: true}
	for _, w := range cfg.Workers {
		settings.Configured = append(settings.Configured, dataflow.Configured{Kind: dataflow.KindWorker, Name: w.Name, Host: w.Host()})
	}
	settings.Configured = append(settings.Configured, dataflow.Configured{Kind: dataflow.KindJudge, Name: "claude-sonnet-4", Host: host})
	var window [2]time.Time
	rep, err := eval.RunSuite(ctx, eval.SuiteStoresOf(roles), set, inc, []shadow.Pipeline{cand}, eval.SuiteOptions{
		SuiteRunID: "suite-flows", ShiftWindow: time.Hour, Graders: graders,
		DataFlows: func(ctx context.Context, from, to time.Time) (*dataflow.Record, error) {
			window = [2]time.Time{from, to}
			rec, err := dataflow.Build(ctx, roles.FlowReader, settings, from, to)
			return &rec, err
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep.DataFlows == nil {
		t.Fatalf("no data-flows section: %s", rep.DataFlowsError)
	}
	if window[1].Sub(window[0]) != time.Hour {
		t.Errorf("window %v, want the report's hour", window)
	}
	byName := map[string]dataflow.Recipient{}
	for _, r := range rep.DataFlows.Recipients {
		byName[r.Kind+"/"+r.Name] = r
	}
	counter.mu.Lock()
	defer counter.mu.Unlock()
	for key, model := range map[string]string{"worker/gpt-5": "gpt-5", "worker/qwen3-32b": "qwen3-32b", "judge/claude-sonnet-4": "claude-sonnet-4"} {
		r := byName[key]
		if r.Status != dataflow.StatusSent || r.Host != host || r.Items != counter.calls[model] || r.Requests != counter.calls[model] ||
			r.SentBytes != counter.bytes[model] || r.SuiteItems != r.Items || r.Items == 0 {
			t.Errorf("%s: %+v; the endpoint got %d calls of %d bytes for %s", key, r, counter.calls[model], counter.bytes[model], model)
		}
	}
	if r := byName["worker/claude-sonnet-4"]; r.Status != dataflow.StatusNothingSent || r.Items != 0 {
		t.Errorf("worker claude-sonnet-4 (only the judge called it): %+v", r)
	}
	if j := byName["judge/claude-sonnet-4"]; j.Provider != dataflow.ProviderSimulated {
		t.Errorf("judge provider %q: its host is the simulated pool", j.Provider)
	}
	md, html := rep.Markdown(), ""
	if html, err = rep.HTML(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md, "## Data flows and recipients") || !strings.Contains(md, "| Worker endpoint gpt-5 | `"+host+"`") {
		t.Errorf("Markdown lacks the data-flows section:\n%s", md)
	}
	if strings.Count(html, `data-testid="data-flow"`) != len(rep.DataFlows.Recipients) {
		t.Errorf("HTML report has %d data-flow rows, want %d", strings.Count(html, `data-testid="data-flow"`), len(rep.DataFlows.Recipients))
	}
}
