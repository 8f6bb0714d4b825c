package dataflow

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/store"
)

// The record lists every recipient that received data with the store's
// figures, the configured ones that received nothing as "configured, nothing
// sent", and one that received data but is no longer configured as such; it
// names providers from hosts, says content or metadata only, and keeps the
// kinds' order.
func TestAssemble(t *testing.T) {
	from := time.Date(2026, 6, 1, 10, 20, 0, 0, time.UTC)
	to := from.Add(7 * 24 * time.Hour)
	totals := store.FlowTotals{
		Calls: []store.FlowCalls{
			{Kind: KindJudge, Name: "claude-sonnet-4", Host: "api.anthropic.com", Models: []string{"claude-sonnet-4"}, Calls: 4, Requests: 4, SuiteCalls: 4},
			{Kind: KindWorker, Name: "gpt-5", Host: "api.openai.com", Models: []string{"gpt-5"}, Calls: 10, Requests: 12, SuiteCalls: 2, InputTokens: 1000, OutputTokens: 100, SentBytes: 9000, ReceivedBytes: 3000},
			{Kind: KindWorker, Name: "conductor", Host: "127.0.0.1:9090", Calls: 5, Requests: 5, SimulatedCalls: 5},
			{Kind: KindWorker, Name: "gpt-5", Host: "old-gateway.internal:8443", Calls: 1, Requests: 1},
		},
		Exports: []store.FlowExportTotal{
			{Kind: KindOTLP, Name: "traces", Host: "127.0.0.1:4318", Items: 40, ContentItems: 0, Requests: 3, SentBytes: 12000},
			{Kind: KindKafka, Name: "conductor-shadow.exchanges", Host: "10.0.0.5:9092", Items: 8, ContentItems: 8, Requests: 2, SentBytes: 16000},
		},
		PII: []store.FlowPII{
			{Kind: KindWorker, Name: "gpt-5", Host: "api.openai.com", PIIKind: "person", Items: 2},
			{Kind: KindWorker, Name: "gpt-5", Host: "api.openai.com", PIIKind: "email", Items: 3},
			{Kind: KindKafka, Name: "conductor-shadow.exchanges", Host: "10.0.0.5:9092", PIIKind: "email", Items: 1},
		},
		UnrecordedCalls: 2,
	}
	s := Settings{
		Configured: []Configured{
			{Kind: KindWorker, Name: "gpt-5", Host: "api.openai.com", Models: []string{"gpt-5"}},
			{Kind: KindWorker, Name: "conductor", Host: "127.0.0.1:9090"},
			{Kind: KindWorker, Name: "gemma-3-27b", Host: "10.1.2.3:8000", Models: []string{"gemma-3-27b"}},
			{Kind: KindJudge, Name: "claude-sonnet-4", Host: "api.anthropic.com"},
			{Kind: KindOTLP, Name: "traces", Host: "127.0.0.1:4318"},
			{Kind: KindKafka, Name: "conductor-shadow.exchanges", Host: "10.0.0.5:9092"},
			{Kind: KindWebhook, Name: "webhook", Host: "hooks.slack.com"},
		},
		Retention:  store.RetentionConfig{Steps: 90 * 24 * time.Hour, Bodies: 30 * 24 * time.Hour},
		PIIEnabled: true, PIIRules: []string{"email", "person"},
	}
	rec := Assemble(totals, s, from, to)
	type row struct{ kind, name, host, status, provider string }
	want := []row{
		{KindWorker, "conductor", "127.0.0.1:9090", StatusSent, ProviderSimulated},
		{KindWorker, "gemma-3-27b", "10.1.2.3:8000", StatusNothingSent, "self-hosted (private network)"},
		{KindWorker, "gpt-5", "api.openai.com", StatusSent, "OpenAI"},
		{KindWorker, "gpt-5", "old-gateway.internal:8443", StatusNotConfigured, "unknown provider (OpenAI-compatible API)"},
		{KindJudge, "claude-sonnet-4", "api.anthropic.com", StatusSent, "Anthropic"},
		{KindOTLP, "traces", "127.0.0.1:4318", StatusSent, "OTLP/HTTP receiver (loopback)"},
		{KindKafka, "conductor-shadow.exchanges", "10.0.0.5:9092", StatusSent, "Kafka cluster (private network)"},
		{KindWebhook, "webhook", "hooks.slack.com", StatusNothingSent, "webhook receiver (remote)"},
	}
	if len(rec.Recipients) != len(want) {
		t.Fatalf("%d recipients, want %d: %+v", len(rec.Recipients), len(want), rec.Recipients)
	}
	for i, w := range want {
		r := rec.Recipients[i]
		if got := (row{r.Kind, r.Name, r.Host, r.Status, r.Provider}); got != w {
			t.Errorf("recipient %d: %+v, want %+v", i, got, w)
		}
	}
	gpt := rec.Recipients[2]
	if gpt.Items != 10 || gpt.Requests != 12 || gpt.SuiteItems != 2 || gpt.SentBytes != 9000 || gpt.InputTokens != 1000 ||
		gpt.PIIText() != "email 3, person 2" || gpt.Received() != "10 calls (2 on regression-set cases)" ||
		!strings.Contains(gpt.Content, "8 of 10 calls on live traffic, pseudonymized") || !strings.Contains(gpt.Retention, "steps kept 90 days, their texts kept 30 days") {
		t.Errorf("gpt-5 at api.openai.com: %+v", gpt)
	}
	if otlp := rec.Recipients[5]; !strings.HasPrefix(otlp.Content, "metadata only") || otlp.Received() != "40 spans" {
		t.Errorf("OTLP: content %q, received %q", otlp.Content, otlp.Received())
	}
	if k := rec.Recipients[6]; !strings.HasPrefix(k.Content, "content: 8 whole exchanges") || k.PIIText() != "email 1" {
		t.Errorf("Kafka: content %q, pii %q", k.Content, k.PIIText())
	}
	if w := rec.Recipients[7]; w.Received() != "nothing" || !strings.Contains(w.Content, "metadata only") {
		t.Errorf("webhook: %+v", w)
	}
	// A configured host that is unknown here matches whatever host of that
	// kind and name received data.
	s.Configured = append(s.Configured, Configured{Kind: KindEmail, Name: "email"})
	totals.Exports = append(totals.Exports, store.FlowExportTotal{Kind: KindEmail, Name: "email", Host: "smtp.example.com:587", Items: 1, Requests: 1, SentBytes: 900})
	if again := Assemble(totals, s, from, to); len(again.Recipients) != len(want)+1 || again.Recipients[len(want)].Status != StatusSent {
		t.Errorf("a configured recipient without a host: %+v", again.Recipients[len(want)-1:])
	}
	if rec.ExportsFrom != from.Truncate(time.Hour) || len(rec.Notes) != 1 || !strings.Contains(rec.Notes[0], "2 worker calls") {
		t.Errorf("exports from %v, notes %q", rec.ExportsFrom, rec.Notes)
	}
	md := rec.Markdown()
	for _, wantLine := range []string{"## Data flows and recipients", "| Worker endpoint gpt-5 | `api.openai.com` | OpenAI | sent | 10 calls (2 on regression-set cases) | 12 | 1000 / 100 | 9000 / 3000 |",
		"| Notification webhook webhook | `hooks.slack.com` | webhook receiver (remote) | configured, nothing sent | nothing |", "rules email, person"} {
		if !strings.Contains(md, wantLine) {
			t.Errorf("Markdown lacks %q:\n%s", wantLine, md)
		}
	}
}

func TestProvider(t *testing.T) {
	for host, want := range map[string]string{
		"api.openai.com": "OpenAI", "API.OpenAI.com:443": "OpenAI", "myres.openai.azure.com": "Azure OpenAI",
		"api.anthropic.com": "Anthropic", "us-central1-aiplatform.googleapis.com": "Google Vertex AI",
		"bedrock-runtime.eu-west-1.amazonaws.com": "AWS (Bedrock)", "openrouter.ai": "OpenRouter",
		"localhost:11434": "self-hosted (loopback)", "127.0.0.1:9090": "self-hosted (loopback)", "[::1]:8000": "self-hosted (loopback)",
		"192.168.1.20:8000": "self-hosted (private network)", "evil-openai.com": "unknown provider (OpenAI-compatible API)",
		"api.openai.com.attacker.net": "unknown provider (OpenAI-compatible API)",
	} {
		if got := Provider(host, false); got != want {
			t.Errorf("Provider(%q) = %q, want %q", host, got, want)
		}
	}
}

// failingWriter refuses writes until ok, then hands them to the store.
type failingWriter struct {
	store.FlowExportWriter
	fail bool
}

func (f *failingWriter) InsertFlowExports(ctx context.Context, rows []store.FlowExport) error {
	if f.fail {
		return errors.New("store down")
	}
	return f.FlowExportWriter.InsertFlowExports(ctx, rows)
}

// The meter's counts reach the store through the real engine, summed over
// processes; a failed flush keeps them and the next one writes them, and
// flushing again writes the same cumulative counts (counted once).
func TestMeterFlushesToStore(t *testing.T) {
	ctx := context.Background()
	st := engine.Open(t)
	roles := store.NewRoles(st)
	w := &failingWriter{FlowExportWriter: roles.FlowExportWriter, fail: true}
	m1, m2 := NewMeter(nil), NewMeter(nil)
	m1.UseWriter(w)
	m2.UseWriter(roles.FlowExportWriter)
	m1.Add(KindKafka, "exchanges", "b1:9092", Delta{Items: 3, ContentItems: 3, Requests: 1, SentBytes: 300, PII: []string{"email", "email", "person"}})
	m2.Add(KindKafka, "exchanges", "b1:9092", Delta{Items: 2, ContentItems: 2, Requests: 1, SentBytes: 200, FailedItems: 1})
	m2.Add(KindOTLP, "traces", "c:4318", Delta{Items: 5, ContentItems: 1, Requests: 1, SentBytes: 50})
	if err := m1.Flush(ctx); err == nil || m1.FlushFailures() != 1 {
		t.Fatalf("flush to a failing store: %v, failures %d", err, m1.FlushFailures())
	}
	w.fail = false
	for _, m := range []*Meter{m1, m1, m2} { // m1 twice: the same counts again
		if err := m.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	m1.Add(KindKafka, "exchanges", "b1:9092", Delta{Items: 1, ContentItems: 1, Requests: 1, SentBytes: 100})
	if err := m1.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m1.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	rec, err := Build(ctx, roles.FlowReader, Settings{Configured: []Configured{{Kind: KindKafka, Name: "exchanges", Host: "b1:9092"}}}, now.Add(-time.Minute), now.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Recipients) != 2 {
		t.Fatalf("recipients %+v", rec.Recipients)
	}
	k, o := rec.Recipients[1], rec.Recipients[0]
	if k.Kind != KindKafka || k.Items != 6 || k.ContentItems != 6 || k.Requests != 3 || k.SentBytes != 600 || k.FailedItems != 1 || k.PIIText() != "email 2, person 1" || k.Status != StatusSent {
		t.Errorf("kafka: %+v", k)
	}
	if o.Kind != KindOTLP || o.Items != 5 || o.ContentItems != 1 || o.Status != StatusNotConfigured || !strings.Contains(o.Content, "1 of 5 spans") {
		t.Errorf("otlp: %+v", o)
	}
}
