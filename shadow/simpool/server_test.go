package simpool

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

func TestChatNonStreaming(t *testing.T) {
	client, _ := start(t, instant())
	c := caseByID(t, "gsm8k-test-0")
	resp, err := client.CreateChatCompletion(context.Background(), openai.ChatCompletionRequest{
		Model: "gpt-5", Messages: userMsg(c.Input),
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp.SystemFingerprint != SystemFingerprint || resp.Model != "gpt-5" || resp.Object != "chat.completion" {
		t.Fatalf("header fields: %+v", resp)
	}
	if got := resp.Header().Get(SimulatedHeader); got != SystemFingerprint {
		t.Fatalf("%s header = %q", SimulatedHeader, got)
	}
	if len(resp.Choices) != 1 || resp.Choices[0].Message.Role != "assistant" || resp.Choices[0].FinishReason != openai.FinishReasonStop {
		t.Fatalf("choices: %+v", resp.Choices)
	}
	if !boxedEndRE.MatchString(resp.Choices[0].Message.Content) {
		t.Fatalf("GSM8K answer does not end with a boxed value: %q", resp.Choices[0].Message.Content)
	}
	u := resp.Usage
	if want := (len([]rune(c.Input)) + 3) / 4; u.PromptTokens != want {
		t.Fatalf("prompt tokens %d, want %d (chars/4)", u.PromptTokens, want)
	}
	if u.CompletionTokens <= 0 || u.TotalTokens != u.PromptTokens+u.CompletionTokens {
		t.Fatalf("usage %+v", u)
	}
	// gpt-5 is a thinking model: most completion tokens are hidden reasoning.
	if u.CompletionTokensDetails == nil || u.CompletionTokensDetails.ReasoningTokens <= 0 ||
		u.CompletionTokensDetails.ReasoningTokens >= u.CompletionTokens {
		t.Fatalf("reasoning tokens: %+v", u.CompletionTokensDetails)
	}
}

func TestChatStreamingMatchesNonStreaming(t *testing.T) {
	client, _ := start(t, instant())
	for _, model := range []string{"claude-sonnet-4", "qwen3-32b-thinking", ConductorModel} {
		t.Run(model, func(t *testing.T) {
			req := openai.ChatCompletionRequest{Model: model, Messages: userMsg(caseByID(t, "HumanEval/4").Input)}
			full, err := client.CreateChatCompletion(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			req.Stream = true
			req.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
			st, err := client.CreateChatCompletionStream(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			var content strings.Builder
			var usage *openai.Usage
			finish, chunks := openai.FinishReason(""), 0
			for {
				ch, err := st.Recv()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				chunks++
				if ch.SystemFingerprint != SystemFingerprint || ch.Model != model {
					t.Fatalf("chunk %d: fingerprint %q model %q", chunks, ch.SystemFingerprint, ch.Model)
				}
				if ch.Usage != nil {
					if len(ch.Choices) != 0 {
						t.Fatal("usage chunk carries choices")
					}
					usage = ch.Usage
				}
				for _, c := range ch.Choices {
					content.WriteString(c.Delta.Content)
					if c.FinishReason != "" {
						finish = c.FinishReason
					}
				}
			}
			if chunks < 3 {
				t.Fatalf("only %d chunks", chunks)
			}
			if content.String() != full.Choices[0].Message.Content {
				t.Fatalf("streamed content differs from the non-streamed one")
			}
			if finish != openai.FinishReasonStop {
				t.Fatalf("finish reason %q", finish)
			}
			if usage == nil || usage.TotalTokens != full.Usage.TotalTokens || usage.CompletionTokens != full.Usage.CompletionTokens {
				t.Fatalf("stream usage %+v, want %+v", usage, full.Usage)
			}
		})
	}
}

func TestStreamWithoutUsage(t *testing.T) {
	_, ts := start(t, instant())
	body := `{"model":"gemma-3-27b","stream":true,"messages":[{"role":"user","content":"Hello there"}]}`
	resp, err := http.Post(ts.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	text := string(raw)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	if !strings.HasSuffix(text, "data: [DONE]\n\n") || strings.Contains(text, `"usage"`) {
		t.Fatalf("stream without include_usage: want [DONE] at the end and no usage field:\n%s", text[max(0, len(text)-400):])
	}
}

func TestUnknownModel(t *testing.T) {
	client, ts := start(t, instant())
	_, err := client.CreateChatCompletion(context.Background(), openai.ChatCompletionRequest{
		Model: "gpt-9", Messages: userMsg("hi"),
	})
	var apiErr *openai.APIError
	if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != http.StatusNotFound || apiErr.Code != "model_not_found" {
		t.Fatalf("got %v, want a 404 model_not_found APIError", err)
	}
	resp, err := http.Get(ts.URL + "/v1/models/gpt-9")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("GET unknown model: %d", resp.StatusCode)
	}
}

func TestMalformedRequests(t *testing.T) {
	_, ts := start(t, instant())
	for _, tc := range []struct{ name, body, param string }{
		{"not json", `{"model":`, ""},
		{"no model", `{"messages":[{"role":"user","content":"hi"}]}`, "model"},
		{"no messages", `{"model":"gpt-5","messages":[]}`, "messages"},
		{"numeric content", `{"model":"gpt-5","messages":[{"role":"user","content":42}]}`, "messages[0]"},
		{"no role", `{"model":"gpt-5","messages":[{"content":"hi"}]}`, "messages[0]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := http.Post(ts.URL+"/v1/chat/completions", "application/json", strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var e struct {
				Error struct {
					Message string  `json:"message"`
					Type    string  `json:"type"`
					Param   *string `json:"param"`
				} `json:"error"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != http.StatusBadRequest || e.Error.Type != "invalid_request_error" || e.Error.Message == "" {
				t.Fatalf("status %d error %+v", resp.StatusCode, e.Error)
			}
			if tc.param != "" && (e.Error.Param == nil || *e.Error.Param != tc.param) {
				t.Fatalf("param %v, want %q", e.Error.Param, tc.param)
			}
		})
	}
}

func TestContentParts(t *testing.T) {
	_, ts := start(t, instant())
	c := caseByID(t, "gsm8k-test-3")
	body, _ := json.Marshal(map[string]any{
		"model": "gpt-5",
		"messages": []any{map[string]any{"role": "user", "content": []any{
			map[string]string{"type": "text", "text": c.Input},
		}}},
	})
	resp, err := http.Post(ts.URL+"/v1/chat/completions", "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out openai.ChatCompletionResponse
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 {
		t.Fatalf("status %d err %v", resp.StatusCode, err)
	}
	if !boxedEndRE.MatchString(out.Choices[0].Message.Content) {
		t.Fatal("a question sent as content parts was not matched")
	}
}

func TestListModels(t *testing.T) {
	client, _ := start(t, instant())
	list, err := client.ListModels(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, m := range list.Models {
		got[m.ID] = true
	}
	for _, want := range append(WorkerModels(), IncumbentModel, ConductorModel, ConductorJSONModel) {
		if !got[want] {
			t.Errorf("model %s not listed", want)
		}
	}
	if len(got) != 10 {
		t.Errorf("%d models, want 10", len(got))
	}
	m, err := client.GetModel(context.Background(), "gpt-5")
	if err != nil || m.ID != "gpt-5" {
		t.Fatalf("GetModel: %+v %v", m, err)
	}
}

func TestDeterminism(t *testing.T) {
	a, _ := start(t, instant())
	b, _ := start(t, instant())
	other := instant()
	other.Seed = 99
	c, _ := start(t, other)
	ask := func(cl *openai.Client, model, q string) string {
		t.Helper()
		r, err := cl.CreateChatCompletion(context.Background(), openai.ChatCompletionRequest{Model: model, Messages: userMsg(q)})
		if err != nil {
			t.Fatal(err)
		}
		return r.Choices[0].Message.Content
	}
	differs := 0
	for _, cs := range shipped(t, "gsm8k-test-1")[:8] {
		for _, model := range []string{"gemma-3-27b", "qwen3-32b"} {
			x, y := ask(a, model, cs.Input), ask(b, model, cs.Input)
			if x != y {
				t.Fatalf("%s %s: same seed, different answers", model, cs.ID)
			}
			if ask(a, model, cs.Input) != x {
				t.Fatalf("%s %s: repeated call gave a different answer", model, cs.ID)
			}
			if ask(c, model, cs.Input) != x {
				differs++
			}
		}
	}
	if differs == 0 {
		t.Fatal("a different seed never changed an answer")
	}
}

// TestAccuracyMatchesProfile sends the whole GSM8K set to a strong and a weak worker
// and checks each accuracy against its profile (4 standard deviations).
func TestAccuracyMatchesProfile(t *testing.T) {
	client, _ := start(t, instant())
	s, _ := New(instant())
	set := shipped(t, "gsm8k-test-")
	if len(set) != 150 {
		t.Fatalf("%d GSM8K cases", len(set))
	}
	acc := map[string]int{}
	for _, model := range []string{"gpt-5", "gemma-3-27b"} {
		k := 0
		for _, c := range set {
			r, err := client.CreateChatCompletion(context.Background(), openai.ChatCompletionRequest{Model: model, Messages: userMsg(c.Input)})
			if err != nil {
				t.Fatal(err)
			}
			if gradedCorrect(r.Choices[0].Message.Content, c.Reference) {
				k++
			}
		}
		p, _ := s.Profile(model)
		want := p.AccuracyFor(FamilyGSM8K)
		if !withinBinomial(k, len(set), want, 4) {
			t.Errorf("%s: %d/%d correct, profile %.3f", model, k, len(set), want)
		}
		acc[model] = k
	}
	if acc["gpt-5"] <= acc["gemma-3-27b"] {
		t.Errorf("gpt-5 %d correct is not above gemma-3-27b %d", acc["gpt-5"], acc["gemma-3-27b"])
	}
}

// TestWorkflowEffect checks p' = 1-(1-p)(1-0.6q): a visible correct earlier answer
// raises a weak worker's accuracy, a visible wrong one does not.
func TestWorkflowEffect(t *testing.T) {
	client, _ := start(t, instant())
	set := shipped(t, "gsm8k-test-")
	p := 0.398 // gemma-3-27b, MATH500 column
	for _, tc := range []struct {
		name  string
		prior func(Case) string
		want  float64
	}{
		{"correct prior", func(c Case) string { return `Worked it out. The final answer is \boxed{` + c.Reference + `}` }, 1 - (1-p)*(1-0.6)},
		{"wrong prior", func(c Case) string { return `Worked it out. The final answer is \boxed{` + c.Reference + `1}` }, p},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := 0
			for _, c := range set {
				msgs := []openai.ChatCompletionMessage{
					{Role: "user", Content: "Solve step by step.\n\n" + c.Input},
					{Role: "assistant", Content: tc.prior(c)},
					{Role: "user", Content: "Check the previous solution of the problem below and give the final answer.\n\n" + c.Input},
				}
				r, err := client.CreateChatCompletion(context.Background(), openai.ChatCompletionRequest{Model: "gemma-3-27b", Messages: msgs})
				if err != nil {
					t.Fatal(err)
				}
				if gradedCorrect(r.Choices[0].Message.Content, c.Reference) {
					k++
				}
			}
			if !withinBinomial(k, len(set), tc.want, 4) {
				t.Errorf("%d/%d correct, want about %.3f", k, len(set), tc.want)
			}
		})
	}
}

func TestInjectedErrors(t *testing.T) {
	for _, tc := range []struct {
		name       string
		rate, fail float64
		status     int
	}{
		{"rate limit", 1, 0, http.StatusTooManyRequests},
		{"server error", 0, 1, http.StatusInternalServerError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := instant()
			cfg.RateLimitProb, cfg.ServerErrorProb, cfg.RetryAfter = tc.rate, tc.fail, 1500*time.Millisecond
			_, ts := start(t, cfg)
			resp, err := http.Post(ts.URL+"/v1/chat/completions", "application/json",
				strings.NewReader(`{"model":"gpt-5","messages":[{"role":"user","content":"hi"}]}`))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.status)
			}
			if tc.status == http.StatusTooManyRequests && resp.Header.Get("Retry-After") != "2" {
				t.Fatalf("Retry-After %q, want 2", resp.Header.Get("Retry-After"))
			}
		})
	}
	// At 50% some calls of the same request succeed and some fail.
	cfg := instant()
	cfg.ServerErrorProb = 0.5
	client, _ := start(t, cfg)
	ok, failed := 0, 0
	for range 40 {
		_, err := client.CreateChatCompletion(context.Background(), openai.ChatCompletionRequest{Model: "gpt-5", Messages: userMsg("hi")})
		if err != nil {
			failed++
		} else {
			ok++
		}
	}
	if ok == 0 || failed == 0 {
		t.Fatalf("50%% errors: %d ok, %d failed", ok, failed)
	}
}

func TestMaxTokensTruncates(t *testing.T) {
	client, _ := start(t, instant())
	c := caseByID(t, "gsm8k-test-0")
	r, err := client.CreateChatCompletion(context.Background(), openai.ChatCompletionRequest{
		Model: "deepseek-r1-distill-qwen-32b", Messages: userMsg(c.Input), MaxCompletionTokens: 64,
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.Choices[0].FinishReason != openai.FinishReasonLength || r.Usage.CompletionTokens != 64 ||
		strings.Contains(r.Choices[0].Message.Content, `\boxed`) {
		t.Fatalf("finish %q, completion tokens %d, content %q", r.Choices[0].FinishReason, r.Usage.CompletionTokens, r.Choices[0].Message.Content)
	}
}

func TestLatencyScale(t *testing.T) {
	const scale = 0.01
	cfg := instant()
	cfg.LatencyScale = scale
	client, _ := start(t, cfg)
	c := caseByID(t, "mmlu-anatomy-5")
	msgs := []message{{Role: "user", Content: askCase(c)}}
	p := DefaultProfiles()
	var gemma Profile
	for _, x := range p {
		if x.Name == "gemma-3-27b" {
			gemma = x
		}
	}
	u := correctnessDraw(cfg.Seed, "gemma-3-27b", posOf(t, c.ID), c, msgs)
	want := answerWorker(gemma, &c, msgs, newRand(cfg.Seed, "gemma-3-27b", c.ID, msgs), u, cfg.PriorHelp, 0)
	begin := time.Now()
	_, err := client.CreateChatCompletion(context.Background(), openai.ChatCompletionRequest{Model: "gemma-3-27b", Messages: userMsg(askCase(c))})
	if err != nil {
		t.Fatal(err)
	}
	if got, min := time.Since(begin), time.Duration(float64(want.Total)*scale); got < min {
		t.Fatalf("took %v, want at least %v (profile latency × %v)", got, min, scale)
	}
	if want.Total < gemma.TTFT/2 {
		t.Fatalf("simulated latency %v is below the profile's TTFT %v", want.Total, gemma.TTFT)
	}
}

func TestNewErrors(t *testing.T) {
	bad := instant()
	bad.LatencyScale = -1
	if _, err := New(bad); err == nil {
		t.Fatal("negative latency scale: want an error")
	}
	missing := instant()
	missing.SetsDir = t.TempDir()
	if _, err := New(missing); err == nil || !strings.Contains(err.Error(), "no *.jsonl") {
		t.Fatalf("empty sets dir: got %v", err)
	}
	s, err := New(Config{LatencyScale: 0, SetsDir: setsDir})
	if err != nil {
		t.Fatal(err)
	}
	if s.CaseCount() != 406 { // 370 benchmark cases + 36 adversarial probes
		t.Fatalf("shipped sets: %d cases, want 406", s.CaseCount())
	}
}

// TestChatMediaParts: a model whose profile takes images answers an image
// request saying how many it saw (SIMULATED) and bills image tokens; a
// text-only model answers 400, as text-only servers do.
func TestChatMediaParts(t *testing.T) {
	client, _ := start(t, instant())
	msgs := []openai.ChatCompletionMessage{{Role: "user", MultiContent: []openai.ChatMessagePart{
		{Type: openai.ChatMessagePartTypeText, Text: "What is in these pictures?"},
		{Type: openai.ChatMessagePartTypeImageURL, ImageURL: &openai.ChatMessageImageURL{URL: "data:image/png;base64,iVBORw0KGgo="}},
		{Type: openai.ChatMessagePartTypeImageURL, ImageURL: &openai.ChatMessageImageURL{URL: "https://example.com/b.png"}},
	}}}
	resp, err := client.CreateChatCompletion(context.Background(), openai.ChatCompletionRequest{Model: "gemma-3-27b", Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Choices[0].Message.Content; !strings.HasPrefix(got, "(SIMULATED: simllm saw 2 images.)") {
		t.Errorf("answer %.80q does not say it saw 2 images", got)
	}
	if want := 2*mediaTokens["image"] + (len("What is in these pictures?")+3)/4; resp.Usage.PromptTokens != want {
		t.Errorf("prompt tokens %d, want %d", resp.Usage.PromptTokens, want)
	}
	for _, model := range []string{"qwen3-32b", ConductorModel} {
		_, err = client.CreateChatCompletion(context.Background(), openai.ChatCompletionRequest{Model: model, Messages: msgs})
		var apiErr *openai.APIError
		if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != http.StatusBadRequest || !strings.Contains(apiErr.Message, "does not take image input") {
			t.Errorf("%s: err %v, want 400 refusing image input", model, err)
		}
	}
}
