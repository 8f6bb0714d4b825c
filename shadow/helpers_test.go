package shadow

import (
	"fmt"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/conductor-shadow/conductor-shadow/shadow/shadowtest"
)

// testConfig is the default configuration pointed at a fake server.
func testConfig(baseURL string) Config {
	cfg := NewDefaultConfig()
	for i := range cfg.Workers {
		cfg.Workers[i].BaseURL = baseURL
	}
	cfg.CallTimeout = 5 * time.Second
	// One try per call: these tests count requests per pipeline step; the retry
	// tests (resilience_test.go) set their own.
	cfg.Resilience.MaxAttempts = 1
	return cfg
}

// answerFor is the fake workers' deterministic answer: it depends on the model and
// on every message received, so a wrong context shows in later steps' inputs.
func answerFor(model string, msgs []openai.ChatCompletionMessage) string {
	last := ""
	if len(msgs) > 0 {
		last = msgs[len(msgs)-1].Content
	}
	return fmt.Sprintf("%s answered %q having seen %d messages", model, last, len(msgs))
}

// tokensFor is the fake usage: 10 prompt tokens per message received and one
// completion token per byte of the answer.
func tokensFor(msgs []openai.ChatCompletionMessage, answer string) (int, int) {
	return 10 * len(msgs), len(answer)
}

// scripted is a fake server: the conductor model replies with plan (or the reply
// conductorReply returns), every other model with answerFor; override may replace
// any reply.
type scripted struct {
	plan     string
	override func(shadowtest.Request) (shadowtest.Reply, bool)
}

func (s scripted) reply(r shadowtest.Request) shadowtest.Reply {
	if s.override != nil {
		if rep, ok := s.override(r); ok {
			return rep
		}
	}
	content := answerFor(r.Decoded.Model, r.Decoded.Messages)
	if r.Decoded.Model == "conductor" {
		content = s.plan
	}
	in, out := tokensFor(r.Decoded.Messages, content)
	return shadowtest.Reply{Content: content, PromptTokens: in, CompletionTokens: out, Fingerprint: "fp_real"}
}

// newFake starts a fake server and a pool pointed at it; both are closed at the
// end of the test.
func newFake(t *testing.T, s scripted) (*shadowtest.Server, *Pool) {
	t.Helper()
	srv := shadowtest.NewServer(s.reply)
	pool, err := NewPool(testConfig(srv.BaseURL()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		pool.Close()
		srv.Close()
	})
	return srv, pool
}

func userRequest(text string) Request {
	return Request{RequestID: "req-1", Messages: []openai.ChatCompletionMessage{{Role: "user", Content: text}}}
}
