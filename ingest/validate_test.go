package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/shadow"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// exchangeWith is good_minimal.json with received_at and the response's figures
// replaced by raw JSON values ("" leaves a key out).
func exchangeWith(receivedAt, latency, ttft, usage, status string) []byte {
	var resp []string
	resp = append(resp, `"model":"gpt-4o","content":"4"`)
	for _, kv := range [][2]string{{"latency_ms", latency}, {"ttft_ms", ttft}, {"usage", usage}, {"status", status}} {
		if kv[1] != "" {
			resp = append(resp, fmt.Sprintf("%q:%s", kv[0], kv[1]))
		}
	}
	at := ""
	if receivedAt != "" {
		at = fmt.Sprintf(`"received_at":%s,`, receivedAt)
	}
	return []byte(`{"request_id":"r-1",` + at + `"request":{"model":"gpt-4o","messages":[{"role":"user","content":"What is 2+2?"}]},` +
		`"response":{` + strings.Join(resp, ",") + `}}`)
}

// TestDecodeExchangeBounds: values no real exchange has are refused with the
// field named; the bounds are the documented ones.
func TestDecodeExchangeBounds(t *testing.T) {
	soon := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	tests := []struct {
		name       string
		body       []byte
		wantReason string // "" = accepted
		wantField  string
	}{
		{"year 9999", exchangeWith(`"9999-01-01T00:00:00Z"`, "100", "", "", ""), ReasonInvalid, "received_at"},
		{"year 1900", exchangeWith(`"1900-01-01T00:00:00Z"`, "100", "", "", ""), ReasonInvalid, "received_at"},
		{"two days ahead", exchangeWith(fmt.Sprintf("%q", time.Now().Add(48*time.Hour).UTC().Format(time.RFC3339)), "100", "", "", ""), ReasonInvalid, "received_at"},
		{"no zone", exchangeWith(`"2026-11-30T09:00:00"`, "100", "", "", ""), ReasonWrongType, "received_at"},
		{"date only", exchangeWith(`"2026-11-30"`, "100", "", "", ""), ReasonWrongType, "received_at"},
		{"latency 1e308", exchangeWith("", "1e308", "", "", ""), ReasonInvalid, "response.latency_ms"},
		{"latency over 24 h", exchangeWith("", "86400001", "", "", ""), ReasonInvalid, "response.latency_ms"},
		{"ttft 1e308", exchangeWith("", "100", "1e308", "", ""), ReasonInvalid, "response.ttft_ms"},
		{"prompt tokens 1e12", exchangeWith("", "100", "", `{"prompt_tokens":1000000000000,"completion_tokens":1}`, ""), ReasonInvalid, "response.usage.prompt_tokens"},
		{"cached above prompt", exchangeWith("", "100", "", `{"prompt_tokens":10,"completion_tokens":1,"prompt_tokens_details":{"cached_tokens":11}}`, ""), ReasonInvalid, "cached tokens"},
		{"status 42", exchangeWith("", "100", "", "", "42"), ReasonInvalid, "response.status"},
		{"zone offset", exchangeWith(`"2026-11-30T10:00:00+01:00"`, "100", "", "", ""), "", ""},
		{"year 2000", exchangeWith(`"2000-01-01T00:00:00Z"`, "100", "", "", ""), "", ""},
		{"an hour ahead", exchangeWith(fmt.Sprintf("%q", soon), "100", "", "", ""), "", ""},
		{"24 h latency", exchangeWith("", "86400000", "", "", ""), "", ""},
		{"429 with its figures", exchangeWith("", "100", "", "", "429"), "", ""},
		{"anthropic usage", exchangeWith("", "100", "", `{"input_tokens":200,"output_tokens":100,"cache_read_input_tokens":800}`, ""), "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeExchange(tt.body, 16, true)
			if tt.wantReason == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var de *DecodeError
			if !errors.As(err, &de) || de.Reason != tt.wantReason {
				t.Fatalf("err %v, want reason %s", err, tt.wantReason)
			}
			if !strings.Contains(de.Detail, tt.wantField) {
				t.Fatalf("detail %q does not name %q", de.Detail, tt.wantField)
			}
		})
	}
}

// TestDecodeExchangeReadsCachedUsage: every spelling of cached prompt tokens
// reaches Usage.CachedPromptTokens.
func TestDecodeExchangeReadsCachedUsage(t *testing.T) {
	tests := []struct {
		usage                string
		prompt, cached, comp int64
	}{
		{`{"prompt_tokens":1000,"completion_tokens":100,"prompt_tokens_details":{"cached_tokens":800}}`, 1000, 800, 100},
		{`{"input_tokens":150,"output_tokens":100,"cache_read_input_tokens":800,"cache_creation_input_tokens":50}`, 1000, 800, 100},
		{`{"input_tokens":1000,"output_tokens":100,"input_tokens_details":{"cached_tokens":800}}`, 1000, 800, 100},
		{`{"prompt_tokens":1000,"completion_tokens":100,"prompt_cache_hit_tokens":800}`, 1000, 800, 100},
	}
	for _, tt := range tests {
		ex, err := DecodeExchange(exchangeWith("", "100", "", tt.usage, ""), 16, true)
		if err != nil {
			t.Fatalf("%s: %v", tt.usage, err)
		}
		if u := ex.Response.Usage; u.PromptTokens != tt.prompt || u.CachedPromptTokens != tt.cached || u.CompletionTokens != tt.comp {
			t.Errorf("%s: usage %+v, want prompt %d cached %d completion %d", tt.usage, u, tt.prompt, tt.cached, tt.comp)
		}
	}
}

// TestTapBatchKeepsGoodItemsBesideInvalidUTF8: one item with invalid UTF-8 is
// rejected on its own; the good items around it are queued.
func TestTapBatchKeepsGoodItemsBesideInvalidUTF8(t *testing.T) {
	_, q, stats, h := newTestTap(t, NewDefaultConfig())
	good1 := string(readFile(t, "good_minimal.json"))
	bad := strings.Replace(strings.Replace(good1, `"r-1"`, `"r-bad"`, 1), "What is", "What\xff\xfe is", 1)
	good2 := strings.Replace(good1, `"r-1"`, `"r-2"`, 1)
	rec, resp := postBatch(h, []byte(`{"exchanges":[`+good1+","+bad+","+good2+`]}`))
	if rec.Code != 200 || len(resp.Results) != 3 {
		t.Fatalf("got %d %s", rec.Code, rec.Body)
	}
	want := []struct{ status, reason string }{{"queued", ""}, {"rejected", ReasonInvalidUTF8}, {"queued", ""}}
	for i, w := range want {
		if r := resp.Results[i]; r.Status != w.status || r.Reason != w.reason {
			t.Errorf("item %d: %+v, want %s %s", i, r, w.status, w.reason)
		}
	}
	if q.Len() != 2 || stats.Snapshot(0).Rejected[ReasonInvalidUTF8] != 1 {
		t.Fatalf("queued %d, rejected %v; want the 2 good items queued and 1 counted rejected", q.Len(), stats.Snapshot(0).Rejected)
	}
}

// TestTapReplacesNUL: a NUL byte in any text of a copy is replaced before it is
// queued (so it is never stored), through /v1/tap and /v1/tap/batch.
func TestTapReplacesNUL(t *testing.T) {
	body := `{"request_id":"nul-1","app":"a\u0000b","request":{"model":"m","messages":[{"role":"user","content":"before\u0000after"}]},` +
		`"response":{"model":"m","content":"x\u0000y","reasoning":"r\u0000","latency_ms":5,"usage":{"prompt_tokens":1,"completion_tokens":1},` +
		`"choices":[{"index":0,"content":"x\u0000y","tool_calls":[{"index":0,"name":"f","arguments":"{\"a\":\"\u0000\"}"}]}]},` +
		`"metadata":{"k":"v\u0000"}}`
	for _, route := range []string{"/v1/tap", "/v1/tap/batch"} {
		t.Run(route, func(t *testing.T) {
			_, q, _, h := newTestTap(t, NewDefaultConfig())
			b := body
			if route == "/v1/tap/batch" {
				b = `{"exchanges":[` + body + `]}`
			}
			rec := postTo(h, route, b)
			if rec.Code != 202 && rec.Code != 200 {
				t.Fatalf("%d %s", rec.Code, rec.Body)
			}
			d, err := q.Next(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			ex := d.Exchange
			texts := []string{ex.App, ex.Request.Messages[0].Content, ex.Response.Content, ex.Response.Reasoning,
				ex.Response.Choices[0].Content, ex.Response.Choices[0].ToolCalls[0].Arguments, ex.Metadata["k"]}
			for _, s := range texts {
				if strings.Contains(s, "\x00") || !strings.Contains(s, "\uFFFD") {
					t.Errorf("text %q: want NUL replaced by U+FFFD", s)
				}
			}
			req, err := RequestRecord(ex)
			if err != nil || strings.Contains(req.Input, "\x00") || strings.Contains(req.Input, `\u0000`) {
				t.Errorf("stored input %q holds a NUL", req.Input)
			}
		})
	}
}

func postTo(h http.Handler, route, body string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, route, strings.NewReader(body)))
	return rec
}

// listPricer prices by shadow.DefaultPrices, the shipped list prices, resolving
// model ids with shadow.ResolvePrice as the server's price table does.
type listPricer struct{}

func (listPricer) Cost(model string, in, out int64) (float64, bool) {
	return listPricer{}.CostUsage(model, shadow.Usage{PromptTokens: in, CompletionTokens: out})
}

func (listPricer) CostUsage(model string, u shadow.Usage) (float64, bool) {
	p, _, ok := shadow.ResolvePrice(shadow.DefaultPrices(), model)
	return p.Cost(u), ok
}

// TestTapPricesCacheWrites: the incumbent's cache writes (Anthropic's
// cache_creation_input_tokens) reach the tap's pricing, survive the queue's JSON
// round trip, and cost the model's cache-write rate (claude: 1.25× input, cache
// reads 0.1×, anthropic.com/pricing); OpenAI cached input has its own rate.
func TestTapPricesCacheWrites(t *testing.T) {
	st := engine.Open(t)
	tests := []struct {
		name, model, usage  string
		prompt, read, write int64
		wantUSD             float64 // from the list prices
	}{
		{"claude: 800 read, 100 written of 1,000", "claude-sonnet-4",
			`{"input_tokens":100,"output_tokens":50,"cache_read_input_tokens":800,"cache_creation_input_tokens":100}`,
			1000, 800, 100, (100*3 + 800*0.30 + 100*3.75 + 50*15) / 1e6},
		{"claude via a gateway's openai spelling", "claude-haiku-4.5",
			`{"prompt_tokens":1000,"completion_tokens":50,"cache_read_input_tokens":800,"cache_creation_input_tokens":100}`,
			1000, 800, 100, (100*1 + 800*0.10 + 100*1.25 + 50*5) / 1e6},
		{"openai cached input at its own rate", "gpt-4o",
			`{"prompt_tokens":1000,"completion_tokens":50,"prompt_tokens_details":{"cached_tokens":800}}`,
			1000, 800, 0, (200*2.50 + 800*1.25 + 50*10) / 1e6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := strings.ReplaceAll(string(exchangeWith("", "100", "", tt.usage, "")), `"gpt-4o"`, strconv.Quote(tt.model))
			raw = strings.Replace(raw, `"r-1"`, strconv.Quote("r-"+tt.model), 1)
			ex, err := DecodeExchange([]byte(raw), 16, true)
			if err != nil {
				t.Fatal(err)
			}
			// The queue carries exchanges as JSON: cache writes must survive it.
			b, err := json.Marshal(ex)
			if err != nil {
				t.Fatal(err)
			}
			var back Exchange
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			for _, u := range []Usage{ex.Response.Usage, back.Response.Usage} {
				if u.PromptTokens != tt.prompt || u.CachedPromptTokens != tt.read || u.CacheWritePromptTokens != tt.write {
					t.Errorf("usage %+v, want prompt %d read %d written %d", u, tt.prompt, tt.read, tt.write)
				}
			}
			run, step := IncumbentRun(back, listPricer{})
			if math.Abs(run.CostUSD-tt.wantUSD) > 1e-12 || math.Abs(step.CostUSD-tt.wantUSD) > 1e-12 {
				t.Errorf("incumbent cost run %.9f step %.9f USD, want %.9f", run.CostUSD, step.CostUSD, tt.wantUSD)
			}
			// Stored and read back from the real engine, the step keeps its cache figures.
			req, err := RequestRecord(back)
			if err != nil {
				t.Fatal(err)
			}
			if err := st.InsertRequests(t.Context(), []store.Request{req}); err != nil {
				t.Fatal(err)
			}
			if err := st.InsertRuns(t.Context(), []store.Run{run}); err != nil {
				t.Fatal(err)
			}
			if err := st.InsertSteps(t.Context(), []store.Step{step}); err != nil {
				t.Fatal(err)
			}
			tr, err := st.GetTrace(t.Context(), req.RequestID)
			if err != nil {
				t.Fatal(err)
			}
			if len(tr.Steps) != 1 || tr.Steps[0].CachedInputTokens != tt.read || tr.Steps[0].CacheWriteInputTokens != tt.write ||
				math.Abs(tr.Steps[0].CostUSD-tt.wantUSD) > 1e-12 {
				t.Errorf("stored steps %+v, want one with %d read, %d written, %.9f USD", tr.Steps, tt.read, tt.write, tt.wantUSD)
			}
		})
	}
	// More cache reads and writes than the prompt holds is refused, with the figures.
	_, err := DecodeExchange(exchangeWith("", "100", "", `{"prompt_tokens":100,"completion_tokens":5,"cache_read_input_tokens":80,"cache_creation_input_tokens":30}`, ""), 16, true)
	if err == nil || !strings.Contains(err.Error(), "cache write tokens 30") {
		t.Errorf("cached 80 + written 30 of a 100-token prompt: err %v, want one naming the cache write tokens", err)
	}
}
