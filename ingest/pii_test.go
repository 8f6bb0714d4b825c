package ingest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/conductor-shadow/conductor-shadow/shadow"
	"github.com/conductor-shadow/conductor-shadow/store"
)

var update = flag.Bool("update", false, "rewrite golden files")

var testSecret = []byte("test-secret-do-not-use")

func testPIIConfig() PIIConfig {
	cfg := NewDefaultPIIConfig()
	cfg.Custom = []CustomPIIRule{{Name: "employee_id", Pattern: `\bEMP-[0-9]{6}\b`}}
	return cfg
}

// TestPseudonymizeText checks, per case, which rules fire and the exact output
// (golden file; tokens are deterministic under the fixed test secret).
func TestPseudonymizeText(t *testing.T) {
	raw, err := os.ReadFile("testdata/pii/text_cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Name  string         `json:"name"`
		App   string         `json:"app"`
		In    string         `json:"in"`
		Rules map[string]int `json:"rules"`
	}
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatal(err)
	}
	p, err := NewPseudonymizer(testPIIConfig(), testSecret)
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	for _, c := range cases {
		fired := map[string]int{}
		out := p.Text(c.App, c.In, fired)
		if !maps.Equal(fired, c.Rules) {
			t.Errorf("%s: rules fired %v, want %v (output %q)", c.Name, fired, c.Rules, out)
		}
		if len(c.Rules) == 0 && out != c.In {
			t.Errorf("%s: text without PII changed: %q", c.Name, out)
		}
		got.WriteString(c.Name + "\t" + out + "\n")
	}
	checkGolden(t, "testdata/pii/text_cases.golden", got.Bytes())
}

func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("output differs from %s:\n got:\n%s\nwant:\n%s", path, got, want)
	}
}

func TestPseudonymTokensAreStablePerTenant(t *testing.T) {
	p, err := NewPseudonymizer(testPIIConfig(), testSecret)
	if err != nil {
		t.Fatal(err)
	}
	other, err := NewPseudonymizer(testPIIConfig(), []byte("another secret"))
	if err != nil {
		t.Fatal(err)
	}
	text := "mail jane.doe@example.com"
	a1 := p.Text("app-a", text, map[string]int{})
	a2 := p.Text("app-a", "mail Jane.Doe@example.COM", map[string]int{})
	b := p.Text("app-b", text, map[string]int{})
	s := other.Text("app-a", text, map[string]int{})
	if a1 != a2 {
		t.Errorf("same value in one app gave %q and %q", a1, a2)
	}
	if a1 == b {
		t.Errorf("two apps share the token %q", a1)
	}
	if a1 == s {
		t.Errorf("two secrets share the token %q", a1)
	}
	if !regexp.MustCompile(`^mail <EMAIL_[0-9a-f]{16}>$`).MatchString(a1) {
		t.Errorf("token shape %q", a1)
	}
}

func TestPIIConfigValidate(t *testing.T) {
	bad := NewDefaultPIIConfig()
	bad.Rules = append(bad.Rules, "ssn")
	bad.Custom = []CustomPIIRule{{Name: "Bad Name", Pattern: "("}}
	err := bad.Validate()
	if err == nil {
		t.Fatal("want an error")
	}
	for _, want := range []string{`"ssn"`, `"Bad Name"`, "pii.custom[0].pattern"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
	if _, err := NewPseudonymizer(NewDefaultPIIConfig(), nil); err == nil {
		t.Error("an empty secret must be refused")
	}
}

// recordingPipeline keeps every request a candidate worker received.
type recordingPipeline struct {
	mu   sync.Mutex
	reqs []shadow.Request
}

func (p *recordingPipeline) Name() string    { return "recorder" }
func (p *recordingPipeline) Version() string { return "v1" }
func (p *recordingPipeline) Run(_ context.Context, req shadow.Request, mode string) shadow.Result {
	p.mu.Lock()
	p.reqs = append(p.reqs, req)
	p.mu.Unlock()
	id := shadow.RunID(req.RequestID, req.SuiteRunID, p.Name())
	return shadow.Result{Run: store.Run{RunID: id, RequestID: req.RequestID, Pipeline: p.Name(), Mode: mode, Status: store.StatusOK, FinalOutput: "ok"}}
}

// TestSeededPIINeverLeaves sends a fixture of exchanges seeded with e-mails, phones,
// IBANs, card numbers and IP addresses through the tap and the shadow workers, then
// looks for every raw value in the store and in every request a worker received.
func TestSeededPIINeverLeaves(t *testing.T) {
	ctx := context.Background()
	cfg := NewDefaultConfig()
	cfg.Workers = 2
	q := NewMemoryQueue(100)
	stats := NewStats()
	tap, err := NewTap(cfg, q, stats, WithPIISecret(testSecret))
	if err != nil {
		t.Fatal(err)
	}
	st := engine.Open(t)
	rec := &recordingPipeline{}
	proc := NewProcessor(cfg, q, syncWriter{st}, []shadow.Pipeline{rec}, flatPricer(0), stats, nil)
	if err := proc.Start(ctx); err != nil {
		t.Fatal(err)
	}

	f, err := os.Open("testdata/pii/seeded.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var ids []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		ex, err := DecodeExchange(sc.Bytes(), cfg.MaxMessages, true)
		if err != nil {
			t.Fatalf("fixture line %d: %v", len(ids)+1, err)
		}
		if code, resp := tap.Offer(ctx, ex); code != 202 {
			t.Fatalf("offer %s: %d %+v", ex.RequestID, code, resp)
		}
		ids = append(ids, ex.RequestID)
	}
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := proc.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}

	var everything bytes.Buffer // all that reached the store and the workers, as JSON
	enc := json.NewEncoder(&everything)
	enc.SetEscapeHTML(false)
	wantRules := map[string]string{"pii-1": "card,email,phone", "pii-2": "iban,phone", "pii-3": "card,email,iban,phone", "pii-4": "ip"}
	for _, id := range ids {
		tr, err := st.GetTrace(ctx, id)
		if err != nil {
			t.Fatalf("trace %s: %v", id, err)
		}
		_ = enc.Encode(tr)
		if got := tr.Request.Metadata[MetadataPIIRules]; got != wantRules[id] {
			t.Errorf("%s: stored pii_rules %q, want %q", id, got, wantRules[id])
		}
		if len(tr.Runs) != 2 {
			t.Errorf("%s: %d runs stored, want incumbent + candidate", id, len(tr.Runs))
		}
	}
	if len(rec.reqs) != len(ids) {
		t.Fatalf("workers received %d requests, want %d", len(rec.reqs), len(ids))
	}
	for _, r := range rec.reqs {
		_ = enc.Encode(r)
	}
	raws, err := os.ReadFile("testdata/pii/raw_values.txt")
	if err != nil {
		t.Fatal(err)
	}
	dump := everything.String()
	for _, raw := range strings.Split(strings.TrimSpace(string(raws)), "\n") {
		if strings.Contains(dump, raw) {
			t.Errorf("raw value %q reached the store or a worker", raw)
		}
	}
	for _, token := range []string{"<EMAIL_", "<PHONE_", "<IBAN_", "<CARD_", "<IP_"} {
		if !strings.Contains(dump, token) {
			t.Errorf("no %s token stored: the fixture's values were not replaced but removed?", token)
		}
	}
	// Text that is not PII survives.
	for _, keep := range []string{"2026-11-30", "12:30:45", "1234 errors", "std::vector", "charged twice"} {
		if !strings.Contains(dump, keep) {
			t.Errorf("non-PII text %q was altered", keep)
		}
	}
	snap := stats.Snapshot(0)
	if snap.PII["email"] < 4 || snap.PII["card"] < 4 || snap.PII["iban"] < 4 || snap.PII["phone"] < 5 || snap.PII["ip"] < 3 {
		t.Errorf("pii counters %v", snap.PII)
	}
}

// BenchmarkPseudonymizeExchange measures one typical exchange (two messages and an
// answer, with an e-mail and a phone number): go test -bench Pseudonymize ./ingest/
func BenchmarkPseudonymizeExchange(b *testing.B) {
	p, err := NewPseudonymizer(NewDefaultPIIConfig(), testSecret)
	if err != nil {
		b.Fatal(err)
	}
	base := exchange("bench", "Customer jane.doe@example.com (+1 415 555 2671) asks: if 48 clips cost 12 dollars, what do 250 cost?")
	base.Request.Messages = append([]openai.ChatCompletionMessage{{Role: "system", Content: "You are a helpful tutor. Answer briefly and show the arithmetic."}}, base.Request.Messages...)
	b.ReportAllocs()
	for b.Loop() {
		ex := base
		p.Exchange(&ex)
	}
}

// TestPseudonymsDoNotCollide: 200,000 distinct values of one rule get 200,000
// distinct tokens. With 32-bit tokens a collision among them is all but
// certain (birthday bound: p ≈ 1 - e^(-n²/2^33) ≈ 0.99); with 64 bits it is
// about 1e-9.
func TestPseudonymsDoNotCollide(t *testing.T) {
	p, err := NewPseudonymizer(testPIIConfig(), testSecret)
	if err != nil {
		t.Fatal(err)
	}
	const n = 200_000
	seen := make(map[string]int, n)
	for i := range n {
		tok := p.Token("app", "email", "EMAIL", fmt.Sprintf("user%d@example.com", i))
		if j, ok := seen[tok]; ok {
			t.Fatalf("values %d and %d share the token %s", j, i, tok)
		}
		seen[tok] = i
	}
}
