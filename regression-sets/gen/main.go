// Command gen builds the shipped regression sets and the replay file from the
// public datasets (see regression-sets/SOURCES.md), so the shipped data can be
// rebuilt byte for byte:
//
//	go run ./regression-sets/gen --src ../shared/datasets --out regression-sets
//
// Regression sets keep each source line's fields in the source order (id,
// category, input, reference, choices, source, license and extras such as level,
// entry_point, test) and add a "grader" field. The replay file
// replay/production-350.jsonl holds 350 exchanges in the ingest Exchange format
// (schema version 1): 150 GSM8K questions with GPT-4-1106's recorded answers as
// the incumbent response, and 200 real user prompts without a response.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"hash/fnv"
	"io"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/conductor-shadow/conductor-shadow/ingest"
	openai "github.com/sashabaranov/go-openai"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		log.Fatalf("gen: %v", err)
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("gen", flag.ContinueOnError)
	src := fs.String("src", "../shared/datasets", "folder of the source datasets (JSONL)")
	out := fs.String("out", "regression-sets", "folder to write the regression sets and replay/ into")
	if err := fs.Parse(args); err != nil {
		return err
	}
	return generate(ctx, *src, *out)
}

// setSpec is one shipped regression set.
type setSpec struct {
	Src, Dst, Grader string
	Count            int // expected number of lines
}

// sets lists the shipped regression sets with their grader: "numeric" compares
// numbers, "math" compares LaTeX answers after normalisation, "choice" compares the
// option letter, "code" runs the HumanEval tests.
var sets = []setSpec{
	{"gsm8k_test_150.jsonl", "gsm8k-150.jsonl", "numeric", 150},
	{"math500_60.jsonl", "math500-60.jsonl", "math", 60},
	{"mmlu_100.jsonl", "mmlu-100.jsonl", "choice", 100},
	{"aime_2025.jsonl", "aime2025-30.jsonl", "numeric", 30},
	{"humaneval_30.jsonl", "humaneval-30.jsonl", "code", 30},
}

// Replay file facts.
const (
	replayName      = "production-350.jsonl"
	replayCount     = 350
	incumbentModel  = "gpt-4-1106-preview"
	gsm8kResponses  = "routellm_gsm8k_responses_150.jsonl"
	gsm8kQuestions  = "gsm8k_test_150.jsonl"
	userPrompts     = "user_prompts_200.jsonl"
	exchangeVersion = 1
)

// replayEnd is the end of the replayed week; exchanges are spread over the 7 days
// before it.
var replayEnd = time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)

func generate(ctx context.Context, src, out string) error {
	for _, s := range sets {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := writeSet(filepath.Join(src, s.Src), filepath.Join(out, s.Dst), s.Grader, s.Count); err != nil {
			return err
		}
	}
	lines, err := buildReplay(src)
	if err != nil {
		return err
	}
	if len(lines) != replayCount {
		return fmt.Errorf("replay: %d exchanges, want %d", len(lines), replayCount)
	}
	if err := os.MkdirAll(filepath.Join(out, "replay"), 0o755); err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	return writeLines(filepath.Join(out, "replay", replayName), lines)
}

// writeSet copies a source JSONL file line by line, compacting each object with its
// keys in the source order, and appends "grader".
func writeSet(src, dst, grader string, want int) error {
	raw, err := os.ReadFile(src)
	if err != nil {
		return fmt.Errorf("set %s: %w", filepath.Base(dst), err)
	}
	var lines [][]byte
	for i, line := range bytes.Split(bytes.TrimRight(raw, "\n"), []byte("\n")) {
		obj, err := decodeOrdered(line)
		if err != nil {
			return fmt.Errorf("set %s: %s:%d: %w", filepath.Base(dst), filepath.Base(src), i+1, err)
		}
		if obj.has("grader") {
			return fmt.Errorf("set %s: %s:%d: already has a grader field", filepath.Base(dst), filepath.Base(src), i+1)
		}
		g, _ := json.Marshal(grader)
		obj = append(obj, field{"grader", g})
		b, err := obj.encode()
		if err != nil {
			return fmt.Errorf("set %s: line %d: %w", filepath.Base(dst), i+1, err)
		}
		lines = append(lines, b)
	}
	if len(lines) != want {
		return fmt.Errorf("set %s: %d lines, want %d", filepath.Base(dst), len(lines), want)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("set %s: %w", filepath.Base(dst), err)
	}
	return writeLines(dst, lines)
}

func writeLines(path string, lines [][]byte) error {
	var buf bytes.Buffer
	for _, l := range lines {
		buf.Write(l)
		buf.WriteByte('\n')
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// field is one key and its raw JSON value.
type field struct {
	Key   string
	Value json.RawMessage
}

// object is a JSON object with its keys in document order.
type object []field

func (o object) has(key string) bool {
	for _, f := range o {
		if f.Key == key {
			return true
		}
	}
	return false
}

// decodeOrdered reads one JSON object keeping its key order.
func decodeOrdered(line []byte) (object, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("line is not a JSON object")
	}
	var o object
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, ok := tok.(string)
		if !ok {
			return nil, errors.New("object key is not a string")
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("value of %q: %w", key, err)
		}
		if o.has(key) {
			return nil, fmt.Errorf("duplicate key %q", key)
		}
		o = append(o, field{key, v})
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after the object")
	}
	return o, nil
}

// encode writes the object compactly; values keep their escaping (no HTML escapes
// are added).
func (o object) encode() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := marshalNoEscape(f.Key)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		if err := json.Compact(&b, f.Value); err != nil {
			return nil, fmt.Errorf("value of %q: %w", f.Key, err)
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func marshalNoEscape(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// row is the subset of a dataset line the replay needs.
type row struct {
	ID         string   `json:"id"`
	QuestionID string   `json:"question_id"`
	Category   string   `json:"category"`
	Input      string   `json:"input"`
	Reference  *string  `json:"reference"`
	Model      string   `json:"model"`
	Output     *string  `json:"output"`
	IsCorrect  *bool    `json:"is_correct"`
	Tags       []string `json:"tags"`
	LangGuess  string   `json:"lang_guess"`
	Source     string   `json:"source"`
	Redacted   bool     `json:"redacted"`
}

func readRows(path string) ([]row, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	var rows []row
	for i, line := range bytes.Split(bytes.TrimRight(raw, "\n"), []byte("\n")) {
		var r row
		if err := json.Unmarshal(line, &r); err != nil {
			return nil, fmt.Errorf("replay: %s:%d: %w", filepath.Base(path), i+1, err)
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// estimateTokens counts ≈4 characters per token, rounded up: the recordings carry
// no usage.
func estimateTokens(s string) int64 { return int64((utf8.RuneCountInString(s) + 3) / 4) }

// receivedAt spreads exchanges deterministically over the week before replayEnd,
// by a hash of the request id, at millisecond resolution.
func receivedAt(id string) time.Time {
	h := fnv.New64a()
	h.Write([]byte(id))
	week := uint64(7 * 24 * time.Hour / time.Millisecond)
	return replayEnd.Add(-7 * 24 * time.Hour).Add(time.Duration(h.Sum64()%week) * time.Millisecond)
}

// appFor maps a user-prompt category (and tags) to the production app it would
// come from.
func appFor(category string, tags []string) string {
	switch {
	case category == "hard_prompt/coding":
		return "coding-assistant"
	case strings.HasPrefix(category, "creative_writing"):
		return "writing-assistant"
	case category == "hard_prompt/math":
		return "math-tutor"
	}
	for _, t := range tags {
		if t == "code" {
			return "coding-assistant"
		}
	}
	return "general-chat"
}

// buildReplay returns the replay lines sorted by received_at, then request_id.
//
// GSM8K exchanges carry GPT-4-1106's recorded answer (RouteLLM) as the incumbent
// response; the recording has no timing or usage, so latency_ms is 0 (unknown) and
// usage is estimated at ≈4 characters per token with usage_estimated true.
// User-prompt exchanges have no response: the replayer asks the incumbent.
func buildReplay(src string) ([][]byte, error) {
	questions, err := readRows(filepath.Join(src, gsm8kQuestions))
	if err != nil {
		return nil, err
	}
	responses, err := readRows(filepath.Join(src, gsm8kResponses))
	if err != nil {
		return nil, err
	}
	prompts, err := readRows(filepath.Join(src, userPrompts))
	if err != nil {
		return nil, err
	}
	answer := map[string]row{}
	for _, r := range responses {
		if r.Model == incumbentModel {
			answer[r.QuestionID] = r
		}
	}
	var exs []ingest.Exchange
	for _, q := range questions {
		a, ok := answer[q.ID]
		if !ok || a.Output == nil || a.IsCorrect == nil {
			return nil, fmt.Errorf("replay: no %s answer for %s", incumbentModel, q.ID)
		}
		if a.Input != q.Input {
			return nil, fmt.Errorf("replay: question text of %s differs between %s and %s", q.ID, gsm8kQuestions, gsm8kResponses)
		}
		meta := map[string]string{
			"category":   q.Category,
			"source":     a.Source,
			"is_correct": fmt.Sprint(*a.IsCorrect),
		}
		if q.Reference != nil {
			meta["reference"] = *q.Reference
		}
		exs = append(exs, ingest.Exchange{
			SchemaVersion: exchangeVersion,
			RequestID:     q.ID,
			App:           "math-tutor",
			ReceivedAt:    receivedAt(q.ID),
			Request:       ingest.ExchangeRequest{Model: incumbentModel, Messages: []openai.ChatCompletionMessage{{Role: "user", Content: q.Input}}},
			Response: &ingest.ExchangeResponse{
				Model:          incumbentModel,
				Content:        *a.Output,
				LatencyMs:      0,
				Usage:          ingest.Usage{PromptTokens: estimateTokens(q.Input), CompletionTokens: estimateTokens(*a.Output)},
				UsageEstimated: true,
			},
			Metadata: meta,
		})
	}
	for _, p := range prompts {
		meta := map[string]string{
			"category":   p.Category,
			"tags":       strings.Join(p.Tags, ","),
			"lang_guess": p.LangGuess,
			"source":     p.Source,
		}
		if p.Redacted {
			meta["redacted"] = "true"
		}
		exs = append(exs, ingest.Exchange{
			SchemaVersion: exchangeVersion,
			RequestID:     p.ID,
			App:           appFor(p.Category, p.Tags),
			ReceivedAt:    receivedAt(p.ID),
			Request:       ingest.ExchangeRequest{Model: incumbentModel, Messages: []openai.ChatCompletionMessage{{Role: "user", Content: p.Input}}},
			Metadata:      meta,
		})
	}
	sort.SliceStable(exs, func(i, j int) bool {
		if !exs[i].ReceivedAt.Equal(exs[j].ReceivedAt) {
			return exs[i].ReceivedAt.Before(exs[j].ReceivedAt)
		}
		return exs[i].RequestID < exs[j].RequestID
	})
	seen := map[string]bool{}
	lines := make([][]byte, 0, len(exs))
	for _, e := range exs {
		if seen[e.RequestID] {
			return nil, fmt.Errorf("replay: duplicate request id %s", e.RequestID)
		}
		seen[e.RequestID] = true
		b, err := marshalNoEscape(e)
		if err != nil {
			return nil, fmt.Errorf("replay: encode %s: %w", e.RequestID, err)
		}
		lines = append(lines, b)
	}
	return lines, nil
}
