package shadow

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/conductor-shadow/conductor-shadow/shadow/shadowtest"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// bigPNG is a data: URL of 195 KB of image bytes (random, so nothing compresses
// or matches by chance).
func bigPNG(t *testing.T) string {
	t.Helper()
	b := make([]byte, 195_000)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "data:image/png;base64," + base64.StdEncoding.EncodeToString(b)
}

// mediaRequest asks about an image, an audio clip and a PDF.
func mediaRequest(img string) []openai.ChatCompletionMessage {
	return []openai.ChatCompletionMessage{{Role: "user", MultiContent: []openai.ChatMessagePart{
		{Type: openai.ChatMessagePartTypeText, Text: "What do these show?"},
		ImagePart(img, "high"),
		AudioPart("UklGRg==", "wav"),
		FilePart("a.pdf", "data:application/pdf;base64,JVBERi0="),
	}}}
}

// TestPoolSendsTheMediaItsWorkerTakes: each worker is sent the media parts of
// the modalities it declares, in the chat completions API's shapes
// (input_audio, file), and a note in place of every other part; a file named
// by a provider file id is never sent.
func TestPoolSendsTheMediaItsWorkerTakes(t *testing.T) {
	img := bigPNG(t)
	tests := []struct {
		worker         string
		sent, withheld int
		want, absent   []string // in the request body
	}{
		{"gemini-2.5-pro", 3, 0,
			[]string{`"image_url":{"url":"data:image/png;base64,`, `"input_audio":{"data":"UklGRg==","format":"wav"}`,
				`"file":{"filename":"a.pdf","file_data":"data:application/pdf;base64,JVBERi0="}`}, []string{"not shown"}},
		{"gpt-5", 2, 1, []string{`"image_url"`, `"file":{"filename":"a.pdf"`, `[an audio clip not shown: audio audio/wav`},
			[]string{`"input_audio"`}},
		{"qwen3-32b", 0, 3, []string{`"content":"What do these show?\n[an image not shown: image image/png, 195,000 bytes`, "this model does not take image input"},
			[]string{`"image_url"`, `"input_audio"`, `"file":{`, "data:image/png;base64"}},
	}
	for _, tt := range tests {
		t.Run(tt.worker, func(t *testing.T) {
			srv, pool := newFake(t, scripted{})
			call, err := pool.Call(context.Background(), tt.worker, mediaRequest(img))
			if err != nil {
				t.Fatal(err)
			}
			if len(call.MediaSent) != tt.sent || len(call.MediaWithheld) != tt.withheld || (tt.withheld > 0) != (call.Sent != nil) {
				t.Errorf("sent %d withheld %d (messages kept: %v), want %d and %d", len(call.MediaSent), len(call.MediaWithheld), call.Sent != nil, tt.sent, tt.withheld)
			}
			body := srv.Requests()[0].Body
			for _, w := range tt.want {
				if !bytes.Contains(body, []byte(w)) {
					t.Errorf("body lacks %s", w)
				}
			}
			for _, a := range tt.absent {
				if bytes.Contains(body, []byte(a)) {
					t.Errorf("body holds %s", a)
				}
			}
		})
	}
	t.Run("provider file id", func(t *testing.T) {
		srv, pool := newFake(t, scripted{})
		msgs := []openai.ChatCompletionMessage{{Role: "user", MultiContent: []openai.ChatMessagePart{
			{Type: openai.ChatMessagePartTypeText, Text: "Summarise"}, FilePart("", FileIDScheme+"file-abc")}}}
		call, err := pool.Call(context.Background(), "gemini-2.5-pro", msgs)
		if err != nil || len(call.MediaWithheld) != 1 || !bytes.Contains(srv.Requests()[0].Body, []byte("held by the incumbent's provider")) {
			t.Errorf("err %v withheld %d body %s", err, len(call.MediaWithheld), srv.Requests()[0].Body)
		}
	})
}

// TestRunsMarkInputReduced: a run none of whose calls received a media part
// of the request is input_reduced and says which; a run where one step got it
// is not. Stored step messages carry each part's type, size and hash, never its
// bytes, and a step that was not sent a part says so in a note.
func TestRunsMarkInputReduced(t *testing.T) {
	img := bigPNG(t)
	req := Request{RequestID: "r-media", Messages: []openai.ChatCompletionMessage{{Role: "user", MultiContent: []openai.ChatMessagePart{
		{Type: openai.ChatMessagePartTypeText, Text: "What is in this picture?"}, ImagePart(img, "")}}}}
	tests := []struct {
		name    string
		cand    CandidateConfig
		reduced bool
	}{
		{"single text-only worker", CandidateConfig{Kind: KindSingle, Workers: []string{"qwen3-32b"}}, true},
		{"single vision worker", CandidateConfig{Kind: KindSingle, Workers: []string{"gpt-5"}}, false},
		{"chain, the last step sees it", CandidateConfig{Kind: KindChain, Workers: []string{"qwen3-32b", "claude-sonnet-4"}}, false},
		{"chain of text-only workers", CandidateConfig{Kind: KindChain, Workers: []string{"qwen3-32b", "deepseek-r1-distill-qwen-32b"}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, pool := newFake(t, scripted{})
			p, err := NewPipeline(pool, tt.cand)
			if err != nil {
				t.Fatal(err)
			}
			res := p.Run(context.Background(), req, store.ModeCandidate)
			if res.Run.Status != store.StatusOK {
				t.Fatalf("status %s: %s", res.Run.Status, res.Run.Error)
			}
			if res.Run.InputReduced != tt.reduced || tt.reduced != strings.Contains(res.Run.InputReducedReason, "1 of 1 media parts reached no call") {
				t.Errorf("input_reduced %v (%q), want %v", res.Run.InputReduced, res.Run.InputReducedReason, tt.reduced)
			}
			for _, s := range res.Steps {
				w, _ := pool.Worker(s.Worker)
				if len(s.Messages) > 4000 || strings.Contains(s.Messages, img[30:200]) {
					t.Errorf("step %d stores %d bytes of messages, the image's data among them", s.Index, len(s.Messages))
				}
				took := w.Accepts(ModalityImage)
				if took != strings.Contains(s.Messages, "media:image/png;bytes=195000;sha256=") || took == strings.Contains(s.Error, "note: input reduced") {
					t.Errorf("step %d (%s takes images: %v): messages %s error %q", s.Index, s.Worker, took, s.Messages, s.Error)
				}
			}
		})
	}
	t.Run("the tap could not rebuild the conversation", func(t *testing.T) {
		_, pool := newFake(t, scripted{})
		p, _ := NewSingle(pool, "gpt-5")
		r := userRequest("and then?")
		r.InputReduced = "previous_response_id resp_x: not seen"
		res := p.Run(context.Background(), r, store.ModeCandidate)
		if !res.Run.InputReduced || res.Run.InputReducedReason != r.InputReduced {
			t.Errorf("input_reduced %v %q", res.Run.InputReduced, res.Run.InputReducedReason)
		}
	})
}

// TestSingleSendsToolsAndKeepsToolCalls: a single candidate sends the
// request's tools; an answer that calls tools is stored as the incumbent's is
// (Run.Choices, Run.ToolCalls) and on the step, fragments merged by index.
func TestSingleSendsToolsAndKeepsToolCalls(t *testing.T) {
	calls := []openai.ToolCall{
		{ID: "call_1", Type: openai.ToolTypeFunction, Function: openai.FunctionCall{Name: "get_weather", Arguments: `{"city":"Paris"}`}},
		{ID: "call_2", Type: openai.ToolTypeFunction, Function: openai.FunctionCall{Name: "get_time", Arguments: `{"tz":"CET"}`}},
	}
	srv, pool := newFake(t, scripted{override: func(shadowtest.Request) (shadowtest.Reply, bool) {
		return shadowtest.Reply{ToolCalls: calls, PromptTokens: 10, CompletionTokens: 5}, true
	}})
	p, _ := NewSingle(pool, "gpt-5")
	req := userRequest("Weather and time in Paris?")
	req.Tools = []openai.Tool{{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{Name: "get_weather",
		Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)}}}
	res := p.Run(context.Background(), req, store.ModeCandidate)
	if res.Run.Status != store.StatusOK {
		t.Fatalf("status %s: %s", res.Run.Status, res.Run.Error)
	}
	if got := srv.Requests()[0].Decoded.Tools; len(got) != 1 || got[0].Function.Name != "get_weather" {
		t.Errorf("tools sent %+v", got)
	}
	const wantCalls = `[{"choice":0,"index":0,"id":"call_1","type":"function","name":"get_weather","arguments":"{\"city\":\"Paris\"}"},` +
		`{"choice":0,"index":1,"id":"call_2","type":"function","name":"get_time","arguments":"{\"tz\":\"CET\"}"}]`
	if res.Run.ToolCalls != wantCalls {
		t.Errorf("run tool calls\n got %s\nwant %s", res.Run.ToolCalls, wantCalls)
	}
	if !strings.Contains(res.Run.Choices, `"finish_reason":"tool_calls"`) || !strings.Contains(res.Run.Choices, `"name":"get_time"`) {
		t.Errorf("run choices %s", res.Run.Choices)
	}
	if s := res.Steps[0]; !strings.Contains(s.ToolCalls, `"arguments":"{\"tz\":\"CET\"}"`) {
		t.Errorf("step tool calls %s", s.ToolCalls)
	}
	// Workflow steps answer subtasks in text: no tools.
	chain, _ := NewPipeline(pool, CandidateConfig{Kind: KindChain, Workers: []string{"gpt-5"}})
	chain.Run(context.Background(), req, store.ModeCandidate)
	if got := srv.Requests()[1].Decoded.Tools; len(got) != 0 {
		t.Errorf("a workflow step was sent tools %+v", got)
	}
}

// TestChatSpanHidesMediaAndCountsCacheReads: with content capture on, a chat
// span's messages show the image by type, size and hash (never its 195 KB of
// data) and the text of every part, within the cap; cached prompt tokens are
// gen_ai.usage.cache_read.input_tokens.
func TestChatSpanHidesMediaAndCountsCacheReads(t *testing.T) {
	img := bigPNG(t)
	srv := shadowtest.NewServer(func(shadowtest.Request) shadowtest.Reply {
		return shadowtest.Reply{Content: "a cat", PromptTokens: 1000, CompletionTokens: 2, CachedTokens: 800}
	})
	defer srv.Close()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	pool, err := NewPool(testConfig(srv.BaseURL()), WithTelemetry(Telemetry{Tracers: tp, CaptureContent: true}))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := pool.Call(context.Background(), "gpt-5", mediaRequest(img)); err != nil {
		t.Fatal(err)
	}
	spans := exp.GetSpans()
	if len(spans) == 0 {
		t.Fatal("no span")
	}
	var input string
	var cacheRead int64 = -1
	for _, kv := range spans[len(spans)-1].Attributes {
		switch kv.Key {
		case "gen_ai.input.messages":
			input = kv.Value.AsString()
		case "gen_ai.usage.cache_read.input_tokens":
			cacheRead = kv.Value.AsInt64()
		}
	}
	if !json.Valid([]byte(input)) || len(input) > DefaultMaxContentBytes || strings.Contains(input, img[30:200]) {
		t.Fatalf("input messages (%d bytes, valid %v) carry the image", len(input), json.Valid([]byte(input)))
	}
	for _, w := range []string{`"content":"What do these show?"`, `"type":"blob","modality":"image","mime_type":"image/png","size_bytes":195000,"sha256":"`,
		`an audio clip not shown`} {
		if !strings.Contains(input, w) {
			t.Errorf("input messages lack %s: %s", w, input)
		}
	}
	if cacheRead != 800 {
		t.Errorf("gen_ai.usage.cache_read.input_tokens = %d, want 800", cacheRead)
	}
}

// TestMessagesWireRoundTrip: messages read from and written in the chat
// completions API's JSON keep every part (text, image_url as object or bare
// URL, input_audio, file by data or id) and every field; a content of another
// JSON type is a type error naming the message.
func TestMessagesWireRoundTrip(t *testing.T) {
	in := `[{"role":"system","content":"S"},{"role":"user","content":[{"type":"text","text":"Look"},` +
		`{"type":"image_url","image_url":{"url":"https://example.com/a.png","detail":"low"}},{"type":"image_url","image_url":"https://example.com/b.png"},` +
		`{"type":"input_audio","input_audio":{"data":"UklGRg==","format":"mp3"}},{"type":"file","file":{"filename":"a.pdf","file_data":"data:application/pdf;base64,JVBERi0="}},` +
		`{"type":"file","file":{"file_id":"file-abc"}}]},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},` +
		`{"role":"tool","content":"42","tool_call_id":"c1","name":"f"}]`
	var msgs []openai.ChatCompletionMessage
	if err := UnmarshalMessages([]byte(in), &msgs); err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 4 || len(msgs[1].MultiContent) != 6 || msgs[2].ToolCalls[0].ID != "c1" || msgs[3].ToolCallID != "c1" || msgs[3].Name != "f" {
		t.Fatalf("decoded %+v", msgs)
	}
	kinds := ""
	for _, md := range RequestMedia(msgs) {
		kinds += md.Modality + " "
	}
	if kinds != "image image audio file file " {
		t.Errorf("media %q", kinds)
	}
	out, err := MarshalMessages(msgs)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(in, `"image_url":"https://example.com/b.png"`, `"image_url":{"url":"https://example.com/b.png"}`, 1)
	want = strings.Replace(want, `"content":null,`, ``, 1)
	var a, b any
	_ = json.Unmarshal(out, &a)
	_ = json.Unmarshal([]byte(want), &b)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("written\n got %s\nwant %s", out, want)
	}
	var typeErr *json.UnmarshalTypeError
	if err := UnmarshalMessages([]byte(`[{"role":"user","content":7}]`), &msgs); !errors.As(err, &typeErr) || typeErr.Field != "0.content" {
		t.Errorf("number content: %v", err)
	}
}
