package ingest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/conductor-shadow/conductor-shadow/shadow"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// tapOf is a tapped exchange whose request asked for reqModel and whose answer
// names respModel, with 1,000 prompt tokens (800 of them cached) and 100
// completion tokens.
func tapOf(id, reqModel, respModel string) []byte {
	return fmt.Appendf(nil, `{"request_id":%q,"request":{"model":%q,"messages":[{"role":"user","content":"hi"}]},`+
		`"response":{"model":%q,"content":"hello","latency_ms":10,`+
		`"usage":{"prompt_tokens":1000,"completion_tokens":100,"prompt_tokens_details":{"cached_tokens":800}}}}`, id, reqModel, respModel)
}

// TestIncumbentRunResolvesModelIDs: the model ids real providers answer with
// (dated snapshots, Anthropic's dash spelling) are priced at their list price,
// response.model falling back to request.model; the step keeps the exact id and
// the pipeline is named by the base id. A model with no price is recorded at 0
// with a note and counted.
func TestIncumbentRunResolvesModelIDs(t *testing.T) {
	// 200 fresh + 800 cached prompt tokens + 100 completion tokens at each list price.
	cost := func(in, cached, out float64) float64 { return (200*in + 800*cached + 100*out) / 1e6 }
	tests := []struct {
		name, reqModel, respModel string
		wantPipeline              string
		wantUSD                   float64
		wantUnpriced              bool
	}{
		{"anthropic dated snapshot", "claude-sonnet-4", "claude-sonnet-4-20250514", "incumbent:claude-sonnet-4", cost(3, 0.30, 15), false},
		{"openai dated snapshot", "gpt-4o", "gpt-4o-2024-08-06", "incumbent:gpt-4o", cost(2.50, 1.25, 10), false},
		{"anthropic dash minor version, dated", "claude-opus-4-1", "claude-opus-4-1-20250805", "incumbent:claude-opus-4.1", cost(15, 1.50, 75), false},
		{"anthropic 3-5 haiku", "", "claude-3-5-haiku-20241022", "incumbent:claude-3.5-haiku", cost(0.80, 0.08, 4), false},
		{"anthropic latest alias", "", "claude-3-5-haiku-latest", "incumbent:claude-3.5-haiku", cost(0.80, 0.08, 4), false},
		{"openai dotted version, dated", "", "gpt-4.1-2025-04-14", "incumbent:gpt-4.1", cost(2, 0.50, 8), false},
		{"exact id with digits kept", "", "gpt-4-1106-preview", "incumbent:gpt-4-1106-preview", (1000*10 + 100*30) / 1e6, false},
		{"no response model: the request's", "gpt-5", "", "incumbent:gpt-5", cost(1.25, 0.125, 10), false},
		{"unpriced response model: the request's price", "gpt-5-mini", "acme-router-7", "incumbent:acme-router-7", cost(0.25, 0.025, 2), false},
		{"neither priced", "acme-base", "acme-router-7-20250101", "incumbent:acme-router-7", 0, true},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ex, err := DecodeExchange(tapOf(fmt.Sprintf("price-%d", i), tt.reqModel, tt.respModel), 16, true)
			if err != nil {
				t.Fatal(err)
			}
			run, step, unpriced := incumbentRun(ex, listPricer{})
			if run.Pipeline != tt.wantPipeline {
				t.Errorf("pipeline %q, want %q", run.Pipeline, tt.wantPipeline)
			}
			wantModel := tt.respModel
			if wantModel == "" {
				wantModel = tt.reqModel
			}
			if step.Model != wantModel {
				t.Errorf("step model %q, want the exact id %q", step.Model, wantModel)
			}
			if math.Abs(run.CostUSD-tt.wantUSD) > 1e-12 || math.Abs(step.CostUSD-tt.wantUSD) > 1e-12 {
				t.Errorf("cost run %.9f step %.9f USD, want %.9f", run.CostUSD, step.CostUSD, tt.wantUSD)
			}
			if noted := strings.Contains(step.Error, "no price for model"); noted != tt.wantUnpriced || (unpriced != "") != tt.wantUnpriced {
				t.Errorf("step error %q, unpriced %q; want unpriced %v", step.Error, unpriced, tt.wantUnpriced)
			}
		})
	}
}

// TestStoreQueueCountsUnpricedIncumbents: an incumbent stored at 0 USD for want
// of a price is counted by base model id in the stats (and so in the metrics),
// while a dated snapshot of a listed model is priced and stored under the base
// id's pipeline.
func TestStoreQueueCountsUnpricedIncumbents(t *testing.T) {
	st := engine.Open(t)
	stats := NewStats()
	q, err := NewStoreQueue(storeFirstConfig(), st, nil, listPricer{}, stats, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.Shutdown(context.Background()) })
	if err := q.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, b := range [][]byte{
		tapOf("uq-1", "acme-base", "acme-router-7-20250101"),
		tapOf("uq-2", "acme-base", "acme-router-7-2025-02-01"),
		tapOf("uq-3", "claude-sonnet-4", "claude-sonnet-4-20250514"),
	} {
		ex, err := DecodeExchange(b, 16, true)
		if err != nil {
			t.Fatal(err)
		}
		if err := q.Publish(t.Context(), ex); err != nil {
			t.Fatal(err)
		}
	}
	if got := stats.Snapshot(0).Unpriced; len(got) != 1 || got["acme-router-7"] != 2 {
		t.Errorf("unpriced %v, want acme-router-7: 2", got)
	}
	tr, err := st.GetTrace(t.Context(), "uq-3")
	if err != nil {
		t.Fatal(err)
	}
	want := (200*3 + 800*0.30 + 100*15) / 1e6
	if len(tr.Runs) != 1 || tr.Runs[0].Pipeline != "incumbent:claude-sonnet-4" || tr.Runs[0].Mode != store.ModeIncumbent ||
		math.Abs(tr.Runs[0].CostUSD-want) > 1e-12 {
		t.Errorf("stored runs %+v, want one incumbent:claude-sonnet-4 run at %.9f USD", tr.Runs, want)
	}
	if len(tr.Steps) != 1 || tr.Steps[0].Model != "claude-sonnet-4-20250514" {
		t.Errorf("stored steps %+v, want one step keeping the model id claude-sonnet-4-20250514", tr.Steps)
	}
}

// TestTapRefusesOutOfRangeUsage: every token count of every usage spelling must be
// 0..100,000,000; one outside is a 400 naming the field, and nothing is queued.
func TestTapRefusesOutOfRangeUsage(t *testing.T) {
	tests := []struct{ usage, field string }{
		{`{"input_tokens":1000,"output_tokens":50,"cache_read_input_tokens":-900,"cache_creation_input_tokens":-50}`, "response.usage.cache_read_input_tokens"},
		{`{"input_tokens":1000,"output_tokens":50,"cache_creation_input_tokens":-50}`, "response.usage.cache_creation_input_tokens"},
		{`{"input_tokens":1000,"output_tokens":50,"cache_read_input_tokens":100000001}`, "response.usage.cache_read_input_tokens"},
		{`{"input_tokens":-1,"output_tokens":50}`, "response.usage.input_tokens"},
		{`{"input_tokens":10,"output_tokens":-50}`, "response.usage.output_tokens"},
		{`{"input_tokens":10,"output_tokens":5,"input_tokens_details":{"cached_tokens":-3}}`, "response.usage.input_tokens_details.cached_tokens"},
		{`{"prompt_tokens":-5,"completion_tokens":1}`, "response.usage.prompt_tokens"},
		{`{"prompt_tokens":5,"completion_tokens":-1}`, "response.usage.completion_tokens"},
		{`{"prompt_tokens":5,"completion_tokens":1,"prompt_tokens_details":{"cached_tokens":-2}}`, "response.usage.prompt_tokens_details.cached_tokens"},
		{`{"prompt_tokens":5,"completion_tokens":1,"prompt_cache_hit_tokens":-2}`, "response.usage.prompt_cache_hit_tokens"},
		{`{"prompt_tokens":5,"completion_tokens":1,"cached_tokens":-2}`, "response.usage.cached_tokens"},
		{`{"promptTokenCount":-5,"candidatesTokenCount":1}`, "response.usage.promptTokenCount"},
		{`{"promptTokenCount":5,"candidatesTokenCount":1,"thoughtsTokenCount":-1}`, "response.usage.thoughtsTokenCount"},
		{`{"promptTokenCount":5,"candidatesTokenCount":1,"cachedContentTokenCount":-1}`, "response.usage.cachedContentTokenCount"},
		{`{"prompt_tokens":5,"completion_tokens":1,"orchestration_input_tokens":-7}`, "response.usage.orchestration_input_tokens"},
		{`{"prompt_tokens":5,"completion_tokens":1,"orchestration_output_tokens":100000001}`, "response.usage.orchestration_output_tokens"},
	}
	_, q, stats, h := newTestTap(t, NewDefaultConfig())
	for i, tt := range tests {
		body := fmt.Sprintf(`{"request_id":"neg-%d","request":{"model":"claude-sonnet-4","messages":[{"role":"user","content":"hi"}]},`+
			`"response":{"model":"claude-sonnet-4-20250514","content":"x","latency_ms":5,"usage":%s}}`, i, tt.usage)
		_, err := DecodeExchange([]byte(body), 16, true)
		var de *DecodeError
		if !errors.As(err, &de) || de.Reason != ReasonInvalid || !strings.Contains(de.Detail, `"`+tt.field+`"`) {
			t.Errorf("%s: err %v, want reason %s naming %q", tt.usage, err, ReasonInvalid, tt.field)
		}
		rec, _ := post(h, []byte(body))
		if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), tt.field) {
			t.Errorf("%s: /v1/tap answered %d %s; want 400 naming %s", tt.usage, rec.Code, rec.Body, tt.field)
		}
	}
	if q.Len() != 0 || stats.Snapshot(0).Rejected[ReasonInvalid] != int64(len(tests)) {
		t.Errorf("queued %d, rejected %v; want nothing queued and %d refused as invalid", q.Len(), stats.Snapshot(0).Rejected, len(tests))
	}
	// The bounds themselves are accepted.
	edge := fmt.Sprintf(`{"input_tokens":0,"output_tokens":%d,"cache_read_input_tokens":%[1]d}`, shadow.MaxUsageTokens)
	if _, err := DecodeExchange([]byte(`{"request_id":"edge","request":{"model":"m","messages":[{"role":"user","content":"hi"}]},`+
		`"response":{"model":"m","content":"x","latency_ms":5,"usage":`+edge+`}}`), 16, true); err != nil {
		t.Errorf("%s: refused: %v", edge, err)
	}
}

// TestStatsCapsUnpricedModels: model ids come from tapped traffic, so the
// unpriced count names at most maxUnpricedModels of them; the rest are "other",
// and nothing is lost from the total.
func TestStatsCapsUnpricedModels(t *testing.T) {
	s := NewStats()
	for i := range maxUnpricedModels + 5 {
		s.unpriced(fmt.Sprintf("m-%d", i))
	}
	s.unpriced("m-0") // a named id keeps counting under its name
	s.unpriced("")    // priced: not counted
	got := s.Snapshot(0).Unpriced
	var total int64
	for _, n := range got {
		total += n
	}
	if len(got) != maxUnpricedModels+1 || got["other"] != 5 || got["m-0"] != 2 || total != maxUnpricedModels+6 {
		t.Errorf("%d ids, other %d, m-0 %d, total %d; want %d ids, other 5, m-0 2, total %d",
			len(got), got["other"], got["m-0"], total, maxUnpricedModels+1, maxUnpricedModels+6)
	}
}
