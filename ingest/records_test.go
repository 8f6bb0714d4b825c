package ingest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/shadow"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// TestIncumbentFailuresAreStoredAndShadowed: an incumbent failure, an answer cut
// off by the client and one broken off by the incumbent are each stored as the
// incumbent run with what happened, and the candidate still runs beside it.
func TestIncumbentFailuresAreStoredAndShadowed(t *testing.T) {
	tests := []struct {
		name       string
		resp       ExchangeResponse
		wantStatus string
		wantHTTP   int32
		wantErr    string
	}{
		{"429 with Retry-After", ExchangeResponse{Model: "gpt-4o", Status: 429, LatencyMs: 40,
			Error:   `{"error":{"message":"Rate limit reached","code":"rate_limit_exceeded"}}`,
			Headers: map[string]string{"retry-after": "20", "x-ratelimit-remaining-requests": "0"}},
			store.StatusError, 429, "the incumbent answered HTTP 429 Too Many Requests: {\"error\":{\"message\":\"Rate limit reached\",\"code\":\"rate_limit_exceeded\"}} (Retry-After: 20)"},
		{"500 without a body", ExchangeResponse{Model: "gpt-4o", Status: 500, Error: "HTTP 500 with an empty body"},
			store.StatusError, 500, "the incumbent answered HTTP 500 Internal Server Error: HTTP 500 with an empty body"},
		{"client hung up", ExchangeResponse{Model: "gpt-4o", Status: 200, Content: "The ans", Partial: true, CancelledByClient: true, LatencyMs: 900},
			store.StatusCancelledByClient, 200, "the client hung up mid-answer: the run holds the 7 characters that arrived"},
		{"incumbent broke off", ExchangeResponse{Model: "gpt-4o", Status: 200, Content: "The ans", Partial: true, Error: "the incumbent broke off mid-answer"},
			store.StatusError, 200, "the incumbent broke off mid-answer"},
		{"error event in a 200 stream", ExchangeResponse{Model: "gpt-4o", Status: 200, Content: "The", Error: "server_error: boom"},
			store.StatusError, 200, "server_error: boom"},
		{"ok", ExchangeResponse{Model: "gpt-4o", Status: 200, Content: "4", Usage: Usage{PromptTokens: 10, CompletionTokens: 1}},
			store.StatusOK, 200, ""},
		{"ok without a recorded status", ExchangeResponse{Model: "gpt-4o", Content: "4", Usage: Usage{PromptTokens: 10, CompletionTokens: 1}},
			store.StatusOK, 0, ""},
	}
	st := engine.Open(t) // shared: each row stores its own request id
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			id := fmt.Sprintf("fail-%d", i)
			cfg := NewDefaultConfig()
			q := NewMemoryQueue(10)
			p := NewProcessor(cfg, q, syncWriter{st}, []shadow.Pipeline{&echoPipeline{}}, flatPricer(0.001), NewStats(), nil)
			if err := p.Start(ctx); err != nil {
				t.Fatal(err)
			}
			ex := exchange(id, "what is 2+2?")
			resp := tt.resp
			ex.Response = &resp
			if err := q.Publish(ctx, ex); err != nil {
				t.Fatal(err)
			}
			sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			if err := p.Shutdown(sctx); err != nil {
				t.Fatal(err)
			}
			tr, err := st.GetTrace(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if len(tr.Runs) != 2 {
				t.Fatalf("%d runs, want the incumbent's and the candidate's", len(tr.Runs))
			}
			var inc, cand store.Run
			for _, r := range tr.Runs {
				if r.Mode == store.ModeIncumbent {
					inc = r
				} else {
					cand = r
				}
			}
			if inc.Status != tt.wantStatus || inc.HTTPStatus != tt.wantHTTP || inc.Error != tt.wantErr {
				t.Errorf("incumbent run status %q http %d error %q; want %q %d %q", inc.Status, inc.HTTPStatus, inc.Error, tt.wantStatus, tt.wantHTTP, tt.wantErr)
			}
			if inc.Partial != tt.resp.Partial || inc.FinalOutput != tt.resp.Content || len(inc.ResponseHeaders) != len(tt.resp.Headers) {
				t.Errorf("incumbent run partial %v output %q headers %v", inc.Partial, inc.FinalOutput, inc.ResponseHeaders)
			}
			if cand.Status != store.StatusOK || cand.FinalOutput != "what is 2+2?" {
				t.Errorf("candidate run %q %q: it must still be shadowed", cand.Status, cand.FinalOutput)
			}
		})
	}
}
