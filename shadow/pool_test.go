package shadow

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/conductor-shadow/conductor-shadow/shadow/shadowtest"
)

func TestPoolCall(t *testing.T) {
	msgs := []openai.ChatCompletionMessage{{Role: "user", Content: "What is 6*7?"}}
	tests := []struct {
		name          string
		worker        string
		reply         shadowtest.Reply
		wantUsage     bool
		wantSimulated bool
		wantErr       string
	}{
		{name: "usage and price", worker: "claude-sonnet-4",
			reply: shadowtest.Reply{Content: "42, because 6*7=42.", PromptTokens: 1234, CompletionTokens: 567}, wantUsage: true},
		{name: "simulated pool", worker: "gpt-5",
			reply:     shadowtest.Reply{Content: "42", PromptTokens: 10, CompletionTokens: 2, Fingerprint: "simllm-v1-seed7"},
			wantUsage: true, wantSimulated: true},
		{name: "no usage reported", worker: "gemma-3-27b",
			reply: shadowtest.Reply{Content: "42", PromptTokens: 10, CompletionTokens: 2, OmitUsage: true}},
		{name: "http error", worker: "qwen3-32b",
			reply: shadowtest.Reply{Status: 503, ErrorMessage: "overloaded"}, wantErr: "overloaded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, pool := newFake(t, scripted{override: func(shadowtest.Request) (shadowtest.Reply, bool) { return tt.reply, true }})
			call, err := pool.Call(context.Background(), tt.worker, msgs)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), tt.worker) {
					t.Fatalf("err = %v, want it to name %q and contain %q", err, tt.worker, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if call.Output != tt.reply.Content {
				t.Errorf("output %q, want %q", call.Output, tt.reply.Content)
			}
			if call.UsageReported != tt.wantUsage || call.Simulated != tt.wantSimulated {
				t.Errorf("usage reported %v simulated %v, want %v %v", call.UsageReported, call.Simulated, tt.wantUsage, tt.wantSimulated)
			}
			w, _ := pool.Worker(tt.worker)
			wantIn, wantOut := int64(tt.reply.PromptTokens), int64(tt.reply.CompletionTokens)
			if !tt.wantUsage {
				wantIn, wantOut = 0, 0
			}
			if call.PromptTokens != wantIn || call.CompletionTokens != wantOut {
				t.Errorf("tokens %d/%d, want %d/%d", call.PromptTokens, call.CompletionTokens, wantIn, wantOut)
			}
			wantCost := (float64(wantIn)*w.InputUSDPerMTok + float64(wantOut)*w.OutputUSDPerMTok) / 1e6
			if !approx(call.CostUSD, wantCost) {
				t.Errorf("cost %g, want %g", call.CostUSD, wantCost)
			}
			if call.TTFTMs <= 0 || call.TTFTMs > call.LatencyMs {
				t.Errorf("ttft %g ms, latency %g ms: want 0 < ttft <= latency", call.TTFTMs, call.LatencyMs)
			}
			if call.Model != w.Model || call.StartedAt.IsZero() {
				t.Errorf("call %+v", call)
			}
			reqs := srv.Requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests, want 1", len(reqs))
			}
			d := reqs[0].Decoded
			if !d.Stream || !reqs[0].IncludeUsage || d.Model != w.Model {
				t.Errorf("request: stream %v include_usage %v model %q", d.Stream, reqs[0].IncludeUsage, d.Model)
			}
		})
	}
}

// Reasoning-family models (gpt-5, o-series) take max_completion_tokens and only
// their default temperature; others take max_tokens and the configured temperature.
func TestPoolRequestParameters(t *testing.T) {
	srv, pool := newFake(t, scripted{})
	ctx := context.Background()
	msgs := []openai.ChatCompletionMessage{{Role: "user", Content: "hi"}}
	for _, w := range []string{"gpt-5", "qwen3-32b"} {
		if _, err := pool.Call(ctx, w, msgs); err != nil {
			t.Fatal(err)
		}
	}
	gpt := srv.RequestsFor("gpt-5")[0].Decoded
	if gpt.MaxCompletionTokens != 4096 || gpt.MaxTokens != 0 || gpt.Temperature != 0 {
		t.Errorf("gpt-5 request: max_completion_tokens %d max_tokens %d temperature %g", gpt.MaxCompletionTokens, gpt.MaxTokens, gpt.Temperature)
	}
	qwen := srv.RequestsFor("qwen3-32b")[0].Decoded
	if qwen.MaxTokens != 4096 || qwen.Temperature != 0.2 {
		t.Errorf("qwen3-32b request: max_tokens %d temperature %g", qwen.MaxTokens, qwen.Temperature)
	}
}

func TestPoolAPIKeyFromEnv(t *testing.T) {
	t.Setenv("SHADOW_TEST_KEY", "sk-test-123")
	srv := shadowtest.NewServer(scripted{}.reply)
	defer srv.Close()
	cfg := testConfig(srv.BaseURL())
	cfg.Workers[0].APIKeyEnv = "SHADOW_TEST_KEY"
	pool, err := NewPool(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	for _, w := range []string{cfg.Workers[0].Name, cfg.Workers[1].Name} {
		if _, err := pool.Call(context.Background(), w, []openai.ChatCompletionMessage{{Role: "user", Content: "x"}}); err != nil {
			t.Fatal(err)
		}
	}
	if got := srv.RequestsFor(cfg.Workers[0].Model)[0].Auth; got != "Bearer sk-test-123" {
		t.Errorf("auth with key env = %q", got)
	}
	if got := srv.RequestsFor(cfg.Workers[1].Model)[0].Auth; strings.Contains(got, "sk-") {
		t.Errorf("auth without key env = %q", got)
	}
}

func TestPoolUnknownWorker(t *testing.T) {
	srv, pool := newFake(t, scripted{})
	_, err := pool.Call(context.Background(), "llama-9000", nil)
	if !errors.Is(err, ErrUnknownWorker) || !strings.Contains(err.Error(), "llama-9000") {
		t.Fatalf("err = %v, want ErrUnknownWorker naming the worker", err)
	}
	if _, err := NewSingle(pool, "llama-9000"); !errors.Is(err, ErrUnknownWorker) {
		t.Errorf("NewSingle: err = %v, want ErrUnknownWorker", err)
	}
	cfg := NewDefaultConfig().Conductor
	cfg.Pool = append(cfg.Pool, "llama-9000")
	if _, err := NewConductor(pool, cfg); err == nil || !strings.Contains(err.Error(), "llama-9000") {
		t.Errorf("NewConductor: err = %v, want it to name the unknown worker", err)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d requests sent for an unknown worker", n)
	}
}

func TestPoolCallTimeout(t *testing.T) {
	srv := shadowtest.NewServer(func(shadowtest.Request) shadowtest.Reply {
		return shadowtest.Reply{Content: "late", Delay: 5 * time.Second}
	})
	defer srv.Close()
	cfg := testConfig(srv.BaseURL())
	cfg.CallTimeout = 50 * time.Millisecond
	pool, err := NewPool(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	call, err := pool.Call(context.Background(), "gpt-5", []openai.ChatCompletionMessage{{Role: "user", Content: "x"}})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want a deadline error", err)
	}
	if call.LatencyMs < 50 {
		t.Errorf("latency %g ms, want >= the 50 ms timeout", call.LatencyMs)
	}
}

func TestNewPoolRejectsInvalidConfig(t *testing.T) {
	cfg := NewDefaultConfig()
	cfg.CallTimeout = 0
	if _, err := NewPool(cfg); err == nil || !strings.Contains(err.Error(), "call_timeout") {
		t.Fatalf("err = %v", err)
	}
}
