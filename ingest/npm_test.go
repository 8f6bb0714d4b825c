package ingest

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/conductor-shadow/conductor-shadow/ingest/incumbenttest"
	"github.com/conductor-shadow/conductor-shadow/shadow"
)

// The official npm clients checked through the proxy, pinned.
const (
	npmOpenAIVersion    = "7.55.0"
	npmAnthropicVersion = "1.15.0"
)

// nodeClient installs an npm package into a temporary directory (npm install,
// as a fresh CI machine does) with a check script from testdata/npm and runs
// it against a base URL, returning its standard output. Skipped without node
// and npm.
type nodeClient struct {
	node, dir string
}

func installNodeClient(t *testing.T, ctx context.Context, pkg, script string) nodeClient {
	t.Helper()
	node, errNode := exec.LookPath("node")
	npm, errNpm := exec.LookPath("npm")
	if errNode != nil || errNpm != nil {
		t.Skipf("node and npm are not installed: the official %s client check needs both", pkg)
	}
	dir := t.TempDir()
	b, err := os.ReadFile(filepath.Join("testdata", "npm", script))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "check.mjs"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	install := exec.CommandContext(ctx, npm, "install", "--prefer-offline", "--no-audit", "--no-fund", "--silent", "--prefix", dir, pkg)
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("npm install %s: %v\n%s", pkg, err, out)
	}
	return nodeClient{node: node, dir: dir}
}

func (c nodeClient) run(t *testing.T, ctx context.Context, base string) []byte {
	t.Helper()
	cmd := exec.CommandContext(ctx, c.node, filepath.Join(c.dir, "check.mjs"), base)
	cmd.Dir = c.dir
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("node against %s: %v\n%s", base, err, stderr)
	}
	return out
}

// TestOfficialNodeClientThroughProxy installs the official openai npm client into a
// temporary directory and runs the same script against the fake incumbent directly
// and through the proxy, streaming and not: the outputs must be byte-identical,
// and the four mirrored calls must reach the tap.
func TestOfficialNodeClientThroughProxy(t *testing.T) {
	t.Parallel() // mostly npm install (network): beside the other official-client test
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := installNodeClient(t, ctx, "openai@"+npmOpenAIVersion, "openai_check.mjs")

	tap := &recordingTap{}
	f := newProxyFixture(t, &incumbenttest.Handler{Chunks: 5}, tap)
	direct := client.run(t, ctx, f.incumbent.URL+"/v1")
	proxied := client.run(t, ctx, f.front.URL+"/v1")
	if string(direct) != string(proxied) {
		t.Fatalf("the openai client saw different content:\ndirect:  %s\nproxied: %s", direct, proxied)
	}
	var got struct {
		ChatText       string            `json:"chatText"`
		ChatChunks     []json.RawMessage `json:"chatChunks"`
		ResponsesText  string            `json:"responsesText"`
		ResponsesEvent []json.RawMessage `json:"responsesEvents"`
	}
	if err := json.Unmarshal(direct, &got); err != nil {
		t.Fatal(err)
	}
	if got.ChatText == "" || len(got.ChatChunks) < 5 || got.ResponsesText == "" || len(got.ResponsesEvent) < 5 {
		t.Fatalf("the script saw too little: %s", direct)
	}
	waitFor(t, "4 mirrored exchanges", func() bool { return len(tap.all()) == 4 })
	for _, ex := range tap.all() {
		if ex.Response.Content == "" {
			t.Errorf("exchange %s mirrored without the answer", ex.RequestID)
		}
	}
}

// TestOfficialAnthropicClientThroughProxy runs the official Anthropic
// TypeScript SDK against the fake Messages API directly and through the proxy:
// whole messages, a raw stream with thinking, the stream helper with a tool
// call (input_json_delta) and the tool result sent back, an image and a PDF.
// The SDK's outputs must be byte-identical, and each stored copy right: the
// request as chat messages (system prompt, tool turns, media parts, tool
// definitions), the answer's text, reasoning and tool calls, the usage with
// cache reads and 5-minute and 1-hour cache writes, and the cost at
// claude-sonnet-4's list prices.
func TestOfficialAnthropicClientThroughProxy(t *testing.T) {
	t.Parallel() // mostly npm install (network): beside the other official-client test
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	client := installNodeClient(t, ctx, "@anthropic-ai/sdk@"+npmAnthropicVersion, "anthropic_check.mjs")

	tap := &recordingTap{}
	f := newProxyFixture(t, &incumbenttest.Handler{Chunks: 4}, tap)
	direct := client.run(t, ctx, f.incumbent.URL)
	proxied := client.run(t, ctx, f.front.URL)
	if string(direct) != string(proxied) {
		t.Fatalf("the Anthropic SDK saw different content:\ndirect:  %s\nproxied: %s", direct, proxied)
	}
	var seen struct {
		StreamText   string            `json:"streamText"`
		StreamEvents []json.RawMessage `json:"streamEvents"`
		ToolStream   struct {
			Content []struct {
				Type  string          `json:"type"`
				Input json.RawMessage `json:"input"`
			} `json:"content"`
		} `json:"toolStream"`
	}
	if err := json.Unmarshal(direct, &seen); err != nil {
		t.Fatal(err)
	}
	if seen.StreamText != "echo: Stream a greeting." || len(seen.StreamEvents) < 10 ||
		len(seen.ToolStream.Content) != 1 || string(seen.ToolStream.Content[0].Input) != `{"city":"Berlin"}` {
		t.Fatalf("the SDK saw too little: %s", direct)
	}
	waitFor(t, "6 mirrored exchanges", func() bool { return len(tap.all()) == 6 })
	exs := tap.all()

	const model = "claude-sonnet-4-20250514"
	tokens := func(s string) int64 { return int64((len(s) + 3) / 4) }
	// claude-sonnet-4: input 3, cache read 0.30, 5-minute write 3.75 (1.25×),
	// 1-hour write 6 (2×), output 15 USD per 1M tokens (anthropic.com/pricing).
	cost := func(out int64) float64 {
		return (incumbenttest.AnthropicInputTokens*3 + incumbenttest.AnthropicCacheRead*0.30 +
			(incumbenttest.AnthropicCacheWrite-incumbenttest.AnthropicCacheWrite1h)*3.75 +
			incumbenttest.AnthropicCacheWrite1h*6 + float64(out)*15) / 1e6
	}
	weather := openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{Name: "get_weather", Description: "The weather in a city.",
		Parameters: map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []any{"city"}}}}
	tests := []struct {
		name      string
		lastUser  string // the request's last message's text
		content   string
		reasoning string
		call      string // the tool call's arguments, "" for none
		finish    string
		out       int64 // output tokens the fake reported
		tools     bool
		media     []string // MIME types of the request's media parts
	}{
		{name: "whole message", lastUser: "Reach me at jane.doe@example.com — what is 17 * 3?",
			content: "echo: Reach me at jane.doe@example.com — what is 17 * 3?", finish: "stop",
			out: tokens("echo: Reach me at jane.doe@example.com — what is 17 * 3?")},
		{name: "whole message with a tool call", lastUser: "Paris", call: `{"city":"Paris"}`, finish: "tool_calls",
			out: tokens(`{"city":"Paris"}`), tools: true},
		{name: "raw stream with thinking", lastUser: "Stream a greeting.", content: "echo: Stream a greeting.",
			reasoning: "Thinking about: Stream a greeting.", finish: "stop",
			out: tokens("echo: Stream a greeting.") + tokens("Thinking about: Stream a greeting.")},
		{name: "stream helper with a tool call", lastUser: "Berlin", call: `{"city":"Berlin"}`, finish: "tool_calls",
			out: tokens(`{"city":"Berlin"}`), tools: true},
		{name: "tool result sent back", lastUser: "sunny, 21 °C", content: "echo: tool said sunny, 21 °C", finish: "stop",
			out: tokens("echo: tool said sunny, 21 °C"), tools: true},
		{name: "image and document", lastUser: "What is in these?", content: "echo: What is in these? (saw 2 media)", finish: "stop",
			out: tokens("echo: What is in these? (saw 2 media)"), media: []string{"image/png", "application/pdf"}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ex := exs[i]
			req, resp := ex.Request, ex.Response
			if last := shadow.MessageText(req.Messages[len(req.Messages)-1]); last != tt.lastUser {
				t.Fatalf("last message %q, want %q (request %+v)", last, tt.lastUser, req.Messages)
			}
			if req.Model != model || resp.Model != model || resp.Status != 200 || resp.Error != "" || resp.Partial {
				t.Errorf("model %q/%q status %d error %q partial %v", req.Model, resp.Model, resp.Status, resp.Error, resp.Partial)
			}
			if resp.Content != tt.content || resp.Reasoning != tt.reasoning || resp.FinishReason != tt.finish {
				t.Errorf("content %q reasoning %q finish %q, want %q %q %q", resp.Content, resp.Reasoning, resp.FinishReason, tt.content, tt.reasoning, tt.finish)
			}
			var calls []ToolCall
			if len(resp.Choices) > 0 {
				calls = resp.Choices[0].ToolCalls
			}
			switch {
			case tt.call == "" && len(calls) > 0:
				t.Errorf("tool calls %+v, want none", calls)
			case tt.call != "" && (len(calls) != 1 || calls[0].Name != "get_weather" || calls[0].Arguments != tt.call || !strings.HasPrefix(calls[0].ID, "toolu_")):
				t.Errorf("tool calls %+v, want get_weather(%s)", calls, tt.call)
			}
			want := Usage{PromptTokens: incumbenttest.AnthropicInputTokens + incumbenttest.AnthropicCacheRead + incumbenttest.AnthropicCacheWrite,
				CompletionTokens: tt.out, CachedPromptTokens: incumbenttest.AnthropicCacheRead,
				CacheWritePromptTokens: incumbenttest.AnthropicCacheWrite, CacheWrite1hPromptTokens: incumbenttest.AnthropicCacheWrite1h}
			if resp.Usage != want || resp.UsageEstimated {
				t.Errorf("usage %+v (estimated %v), want %+v", resp.Usage, resp.UsageEstimated, want)
			}
			run, step := IncumbentRun(ex, listPricer{})
			if math.Abs(run.CostUSD-cost(tt.out)) > 1e-12 || step.CacheWrite1hInputTokens != incumbenttest.AnthropicCacheWrite1h {
				t.Errorf("cost %.9f USD (1h writes %d), want %.9f", run.CostUSD, step.CacheWrite1hInputTokens, cost(tt.out))
			}
			if run.Pipeline != "incumbent:claude-sonnet-4" {
				t.Errorf("pipeline %q", run.Pipeline)
			}
			if tt.tools != (len(req.Tools) == 1) || tt.tools && !reflect.DeepEqual(roundTripTool(t, req.Tools[0]), weather) {
				t.Errorf("tools %+v, want get_weather: %v", req.Tools, tt.tools)
			}
			var mimes []string
			for _, md := range shadow.RequestMedia(req.Messages) {
				mimes = append(mimes, md.MIME)
			}
			if !reflect.DeepEqual(mimes, tt.media) {
				t.Errorf("media %v, want %v", mimes, tt.media)
			}
			// What the queue and the store carry keeps all of it.
			b, err := json.Marshal(ex)
			if err != nil {
				t.Fatal(err)
			}
			var back Exchange
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(back.Request.Messages, req.Messages) || back.Response.Usage != resp.Usage {
				t.Errorf("JSON round trip changed the exchange:\n%s", b)
			}
		})
	}
	// The system prompt (text blocks with cache_control) and the tool turns.
	if sys := exs[0].Request.Messages[0]; sys.Role != "system" || sys.Content != "You are terse." {
		t.Errorf("system message %+v", sys)
	}
	turns := exs[4].Request.Messages
	if len(turns) != 3 || turns[1].Role != "assistant" || len(turns[1].ToolCalls) != 1 || turns[1].ToolCalls[0].Function.Arguments != `{"city":"Berlin"}` ||
		turns[2].Role != "tool" || turns[2].ToolCallID != turns[1].ToolCalls[0].ID {
		t.Errorf("tool turns %+v", turns)
	}
}

// roundTripTool is t as the queue carries it (JSON), for comparing parameters.
func roundTripTool(t *testing.T, tool openai.Tool) openai.Tool {
	t.Helper()
	b, err := json.Marshal(ExchangeRequest{Tools: []openai.Tool{tool}})
	if err != nil {
		t.Fatal(err)
	}
	var r ExchangeRequest
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r.Tools[0]
}
