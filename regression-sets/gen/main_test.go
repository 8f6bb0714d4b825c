package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/conductor-shadow/conductor-shadow/ingest"
)

var update = flag.Bool("update", false, "rewrite golden files")

// shippedDir is the regression-sets folder this package lives in.
const shippedDir = ".."

// sourcesDir returns the folder of the source datasets, or skips the test when it
// is not present (the shipped files are still checked by the other tests).
func sourcesDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("CONDUCTOR_SHADOW_DATASETS")
	if dir == "" {
		dir = filepath.Join("..", "..", "..", "shared", "datasets")
	}
	if _, err := os.Stat(filepath.Join(dir, userPrompts)); err != nil {
		t.Skipf("source datasets not found in %s (set CONDUCTOR_SHADOW_DATASETS): %v", dir, err)
	}
	return dir
}

func readLines(t *testing.T, path string) [][]byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) == 0 || raw[len(raw)-1] != '\n' {
		t.Fatalf("%s: empty or missing final newline", path)
	}
	return bytes.Split(bytes.TrimSuffix(raw, []byte("\n")), []byte("\n"))
}

func TestShippedSets(t *testing.T) {
	for _, s := range sets {
		t.Run(s.Dst, func(t *testing.T) {
			lines := readLines(t, filepath.Join(shippedDir, s.Dst))
			if len(lines) != s.Count {
				t.Fatalf("%d lines, want %d", len(lines), s.Count)
			}
			want := []string{"id", "category", "input", "reference", "choices", "source", "license", "grader"}
			switch s.Grader {
			case "code":
				want = append(want, "entry_point", "test")
			case "math":
				want = append(want, "level")
			}
			ids := map[string]bool{}
			for i, line := range lines {
				obj, err := decodeOrdered(line)
				if err != nil {
					t.Fatalf("line %d: %v", i+1, err)
				}
				for _, k := range want {
					if !obj.has(k) {
						t.Fatalf("line %d: missing %q", i+1, k)
					}
				}
				if last := obj[len(obj)-1]; last.Key != "grader" || string(last.Value) != `"`+s.Grader+`"` {
					t.Fatalf("line %d: last field %s=%s, want grader=%q", i+1, last.Key, last.Value, s.Grader)
				}
				var c struct {
					ID, Input string
					Reference *string
					Choices   []string
				}
				if err := json.Unmarshal(line, &c); err != nil {
					t.Fatal(err)
				}
				if c.ID == "" || c.Input == "" || c.Reference == nil || *c.Reference == "" || ids[c.ID] {
					t.Fatalf("line %d: empty id/input/reference or duplicate id %q", i+1, c.ID)
				}
				ids[c.ID] = true
				if (s.Grader == "choice") != (len(c.Choices) == 4) {
					t.Fatalf("line %d: %d choices for grader %s", i+1, len(c.Choices), s.Grader)
				}
			}
		})
	}
}

// decodeExchanges reads the shipped replay file strictly.
func decodeExchanges(t *testing.T, path string) []ingest.Exchange {
	t.Helper()
	var out []ingest.Exchange
	for i, line := range readLines(t, path) {
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		var e ingest.Exchange
		if err := dec.Decode(&e); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		// The request must also decode with the client library's message type.
		var req struct {
			Messages []openai.ChatCompletionMessage `json:"messages"`
		}
		raw, _ := json.Marshal(e.Request)
		if err := json.Unmarshal(raw, &req); err != nil || len(req.Messages) != 1 || req.Messages[0].Content != e.Request.Messages[0].Content {
			t.Fatalf("line %d: request does not round-trip through openai.ChatCompletionMessage: %v", i+1, err)
		}
		out = append(out, e)
	}
	return out
}

func TestShippedReplay(t *testing.T) {
	exs := decodeExchanges(t, filepath.Join(shippedDir, "replay", replayName))
	if len(exs) != replayCount {
		t.Fatalf("%d exchanges, want %d", len(exs), replayCount)
	}
	start := replayEnd.Add(-7 * 24 * time.Hour)
	seen := map[string]bool{}
	withResp, apps := 0, map[string]int{}
	for i, e := range exs {
		if e.SchemaVersion != 1 || e.RequestID == "" || e.App == "" || seen[e.RequestID] {
			t.Fatalf("exchange %d: bad header %+v", i, e)
		}
		seen[e.RequestID] = true
		apps[e.App]++
		if e.ReceivedAt.Before(start) || !e.ReceivedAt.Before(replayEnd) {
			t.Fatalf("%s: received_at %v outside the week before %v", e.RequestID, e.ReceivedAt, replayEnd)
		}
		if i > 0 && e.ReceivedAt.Before(exs[i-1].ReceivedAt) {
			t.Fatalf("%s: not sorted by received_at", e.RequestID)
		}
		if e.Request.Model != incumbentModel || len(e.Request.Messages) != 1 || e.Request.Messages[0].Role != "user" {
			t.Fatalf("%s: request %+v", e.RequestID, e.Request)
		}
		if e.Metadata["category"] == "" || e.Metadata["source"] == "" {
			t.Fatalf("%s: metadata %v lacks category or source", e.RequestID, e.Metadata)
		}
		if e.Response == nil {
			if e.Metadata["lang_guess"] == "" {
				t.Fatalf("%s: user prompt without lang_guess", e.RequestID)
			}
			continue
		}
		withResp++
		r := e.Response
		if !strings.HasPrefix(e.RequestID, "gsm8k-test-") || e.App != "math-tutor" || r.Content == "" ||
			!r.UsageEstimated || r.LatencyMs != 0 || r.Usage.PromptTokens <= 0 || r.Usage.CompletionTokens <= 0 {
			t.Fatalf("%s: response %+v", e.RequestID, r)
		}
		if v := e.Metadata["is_correct"]; v != "true" && v != "false" {
			t.Fatalf("%s: is_correct %q", e.RequestID, v)
		}
		if want := estimateTokens(r.Content); r.Usage.CompletionTokens != want {
			t.Fatalf("%s: completion tokens %d, want %d", e.RequestID, r.Usage.CompletionTokens, want)
		}
	}
	if withResp != 150 {
		t.Fatalf("%d exchanges with a response, want 150", withResp)
	}
	for _, app := range []string{"math-tutor", "coding-assistant", "writing-assistant", "general-chat"} {
		if apps[app] == 0 {
			t.Fatalf("no exchange for app %s: %v", app, apps)
		}
	}
}

// TestReplayMatchesSources checks that every replayed text decodes to exactly the
// source dataset's text (user prompts are kept byte for byte).
func TestReplayMatchesSources(t *testing.T) {
	src := sourcesDir(t)
	want := map[string]row{}
	for _, f := range []string{gsm8kQuestions, userPrompts} {
		rows, err := readRows(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			want[r.ID] = r
		}
	}
	resp, err := readRows(filepath.Join(src, gsm8kResponses))
	if err != nil {
		t.Fatal(err)
	}
	answers := map[string]string{}
	for _, r := range resp {
		if r.Model == incumbentModel {
			answers[r.QuestionID] = *r.Output
		}
	}
	exs := decodeExchanges(t, filepath.Join(shippedDir, "replay", replayName))
	for _, e := range exs {
		r, ok := want[e.RequestID]
		if !ok {
			t.Fatalf("%s: not in the sources", e.RequestID)
		}
		if got := e.Request.Messages[0].Content; got != r.Input {
			t.Fatalf("%s: content differs from the source (%d vs %d bytes)", e.RequestID, len(got), len(r.Input))
		}
		if e.Response != nil && e.Response.Content != answers[e.RequestID] {
			t.Fatalf("%s: response differs from the recorded answer", e.RequestID)
		}
		delete(want, e.RequestID)
	}
	if len(want) != 0 {
		t.Fatalf("%d source rows missing from the replay", len(want))
	}
}

// TestGenerateReproducible rebuilds everything and compares with the shipped files.
func TestGenerateReproducible(t *testing.T) {
	src := sourcesDir(t)
	out := t.TempDir()
	if err := run(context.Background(), []string{"--src", src, "--out", out}); err != nil {
		t.Fatal(err)
	}
	files := []string{filepath.Join("replay", replayName)}
	for _, s := range sets {
		files = append(files, s.Dst)
	}
	for _, f := range files {
		got, err := os.ReadFile(filepath.Join(out, f))
		if err != nil {
			t.Fatal(err)
		}
		shipped, err := os.ReadFile(filepath.Join(shippedDir, f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, shipped) {
			t.Errorf("%s: regenerated file differs from the shipped one; run go run ./regression-sets/gen", f)
		}
	}
}

func TestGenerateErrors(t *testing.T) {
	if err := run(context.Background(), []string{"--src", t.TempDir(), "--out", t.TempDir()}); err == nil ||
		!strings.Contains(err.Error(), "gsm8k-150.jsonl") {
		t.Fatalf("missing sources: got %v, want an error naming the set", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := generate(ctx, t.TempDir(), t.TempDir()); err == nil {
		t.Fatal("cancelled context: want an error")
	}
}

func TestWriteSetGolden(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out.jsonl")
	if err := writeSet(filepath.Join("testdata", "ordered_in.jsonl"), out, "numeric", 2); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "ordered_out.golden.jsonl")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	if err := writeSet(filepath.Join("testdata", "ordered_in.jsonl"), out, "numeric", 3); err == nil {
		t.Fatal("wrong count: want an error")
	}
}

func TestDecodeOrderedErrors(t *testing.T) {
	for _, tc := range []struct{ name, in string }{
		{"array", `[1,2]`},
		{"duplicate key", `{"a":1,"a":2}`},
		{"trailing data", `{"a":1} {"b":2}`},
		{"truncated", `{"a":`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := decodeOrdered([]byte(tc.in)); err == nil {
				t.Fatalf("%s: want an error", tc.in)
			}
		})
	}
}

func TestAppFor(t *testing.T) {
	for _, tc := range []struct {
		category string
		tags     []string
		want     string
	}{
		{"hard_prompt/coding", nil, "coding-assistant"},
		{"creative_writing/creative_writing", nil, "writing-assistant"},
		{"hard_prompt/math", nil, "math-tutor"},
		{"arena-hard-v0.1/Python Data Structures", []string{"code", "long"}, "coding-assistant"},
		{"arena-hard-v0.1/Weather Forecast Accuracy", []string{"table"}, "general-chat"},
		{"open_assistant_prompt", nil, "general-chat"},
	} {
		if got := appFor(tc.category, tc.tags); got != tc.want {
			t.Errorf("appFor(%q, %v) = %q, want %q", tc.category, tc.tags, got, tc.want)
		}
	}
}
