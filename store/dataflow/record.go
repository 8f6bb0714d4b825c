package dataflow

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/conductor-shadow/conductor-shadow/store"
)

// Recipient statuses (Recipient.Status).
const (
	StatusSent          = "sent"                       // received data in the window and is configured
	StatusNothingSent   = "configured, nothing sent"   // configured, received nothing in the window
	StatusNotConfigured = "sent, no longer configured" // received data in the window; the configuration no longer names it
)

// Configured is a recipient the configuration names now: a pool worker, the
// suite judge, the OTLP endpoint, the Kafka brokers, a notification sink.
type Configured struct {
	Kind string `json:"kind"` // Kind* constant
	Name string `json:"name"` // worker name, "traces", the topic, the sink
	// Host is host[:port] (no credentials, path or query), the brokers
	// joined by ","; "" when not known here (the webhook's URL is not in
	// this process's environment): it then stands for any host the
	// recipient's kind and name received data at.
	Host string `json:"host"`
	// Models are the model ids it is configured with (workers, the judge).
	Models []string `json:"models,omitempty"`
}

// Settings are what the record says about the configuration: the
// recipients it names and the settings that decide what they may receive
// and how long the platform keeps it.
type Settings struct {
	// Configured lists the configured recipients.
	Configured []Configured `json:"configured"`
	// Retention is store.retention: how long the platform keeps its rows.
	Retention store.RetentionConfig `json:"retention"`
	// PIIEnabled and PIIRules are ingest.pii: pseudonymization of live
	// traffic before it is queued, stored or sent, and its rules.
	PIIEnabled bool     `json:"pii_enabled"`
	PIIRules   []string `json:"pii_rules"`
	// CaptureContent is telemetry.capture_content now: spans carry prompts
	// and answers.
	CaptureContent bool `json:"capture_content"`
}

// PIICount is how many of a recipient's items carried text in which one PII
// kind was pseudonymized before it was sent.
type PIICount struct {
	Kind  string `json:"kind"`  // a PII rule: email, person, …
	Items int64  `json:"items"` // calls or messages
}

// Recipient is one party outside the platform and what it received in the
// window.
type Recipient struct {
	Kind     string   `json:"kind"`     // Kind* constant
	Name     string   `json:"name"`     // worker name, "traces", the topic, the sink
	Host     string   `json:"host"`     // host[:port], never credentials or a query string
	Provider string   `json:"provider"` // who runs it: "OpenAI", "self-hosted (loopback)", "OTLP/HTTP receiver", …
	Models   []string `json:"models,omitempty"`
	Status   string   `json:"status"` // StatusSent, StatusNothingSent, StatusNotConfigured
	// Items counts what it received: calls (workers, judge), spans, messages
	// or notices (Kind.Item says which).
	Items          int64 `json:"items"`
	Requests       int64 `json:"requests"`        // HTTP requests (attempts, retries included), produce batches, SMTP sessions
	SuiteItems     int64 `json:"suite_items"`     // of Items, calls on regression-set cases (not pseudonymized: no live traffic)
	SimulatedItems int64 `json:"simulated_items"` // of Items, calls answered by the simulated pool
	ContentItems   int64 `json:"content_items"`   // of Items, those carrying prompts or answers
	FailedItems    int64 `json:"failed_items"`    // items the recipient did not take (exports)
	InputTokens    int64 `json:"input_tokens"`
	OutputTokens   int64 `json:"output_tokens"`
	SentBytes      int64 `json:"sent_bytes"`     // bodies sent, bytes
	ReceivedBytes  int64 `json:"received_bytes"` // bodies received back, bytes (workers, judge)
	// Content says whether the items carried content (exchange text) or
	// metadata only.
	Content string `json:"content"`
	// PII lists the PII kinds pseudonymized before sending, with how many
	// items had each (by kind name).
	PII []PIICount `json:"pii"`
	// Retention is how long the platform keeps its own record of what was
	// sent (store.retention); AtRecipient what holds at the recipient.
	Retention   string `json:"retention"`
	AtRecipient string `json:"at_recipient"`
}

// Record is the record of data flows of one window.
type Record struct {
	From time.Time `json:"from"` // UTC, inclusive
	To   time.Time `json:"to"`   // UTC, exclusive
	// ExportsFrom is the start of the hour of From: exporters count per
	// hour, so their figures cover the hours the window overlaps.
	ExportsFrom time.Time   `json:"exports_from"`
	Kinds       []Kind      `json:"kinds"`      // every kind, in display order
	Recipients  []Recipient `json:"recipients"` // by kind (Kinds order), name, host
	// PII is the pseudonymization configured now.
	PIIEnabled bool     `json:"pii_enabled"`
	PIIRules   []string `json:"pii_rules"`
	// Retention lists store.retention as "what: setting" lines, and how
	// forget works.
	Retention []string `json:"retention"`
	Deletion  string   `json:"deletion"`
	Notes     []string `json:"notes,omitempty"`
}

// Build reads what left the platform in [from, to) and lists every
// recipient: those that received data (from r) with their figures, then the
// configured ones that received nothing (s.Configured). Errors: an empty or
// inverted window, or the store's.
func Build(ctx context.Context, r store.FlowReader, s Settings, from, to time.Time) (Record, error) {
	if r == nil {
		return Record{}, fmt.Errorf("dataflow: %w", store.NotSupported("store.FlowReader"))
	}
	from, to = from.UTC(), to.UTC()
	if from.IsZero() || !to.After(from) {
		return Record{}, errors.New("dataflow: the window needs a start before its end")
	}
	totals, err := r.FlowTotals(ctx, from, to)
	if err != nil {
		return Record{}, fmt.Errorf("dataflow: %w", err)
	}
	return Assemble(totals, s, from, to), nil
}

type recipientKey struct{ kind, name, host string }

// Assemble merges what a store.FlowReader summed for [from, to) with the
// configured recipients of s into the Record (what Build does after reading).
func Assemble(t store.FlowTotals, s Settings, from, to time.Time) Record {
	rec := Record{From: from, To: to, ExportsFrom: from.Truncate(time.Hour), Kinds: Kinds(),
		PIIEnabled: s.PIIEnabled, PIIRules: slices.Clone(s.PIIRules), Retention: retentionLines(s.Retention),
		Deletion: "conductor-shadow forget --subject ID (POST /api/forget) deletes the subject's requests, runs, steps, scores and judgments here; " +
			"it does not reach what recipients already received"}
	byKey := map[recipientKey]*Recipient{}
	get := func(kind, name, host string) *Recipient {
		k := recipientKey{kind, name, host}
		if r, ok := byKey[k]; ok {
			return r
		}
		r := &Recipient{Kind: kind, Name: name, Host: host}
		byKey[k] = r
		return r
	}
	for _, c := range t.Calls {
		r := get(c.Kind, c.Name, c.Host)
		r.Models = mergeModels(r.Models, c.Models)
		r.Items += c.Calls
		r.Requests += c.Requests
		r.SuiteItems += c.SuiteCalls
		r.SimulatedItems += c.SimulatedCalls
		r.ContentItems += c.Calls // a model call carries its messages
		r.InputTokens += c.InputTokens
		r.OutputTokens += c.OutputTokens
		r.SentBytes += c.SentBytes
		r.ReceivedBytes += c.ReceivedBytes
	}
	for _, e := range t.Exports {
		r := get(e.Kind, e.Name, e.Host)
		r.Items += e.Items
		r.ContentItems += e.ContentItems
		r.Requests += e.Requests
		r.SentBytes += e.SentBytes
		r.FailedItems += e.FailedItems
	}
	for _, p := range t.PII {
		r := get(p.Kind, p.Name, p.Host)
		r.PII = append(r.PII, PIICount{Kind: p.PIIKind, Items: p.Items})
	}
	configured := map[recipientKey]bool{}
	for _, c := range s.Configured {
		if c.Host == "" { // host unknown here (a webhook URL not in this process's environment): any host of its name
			matched := false
			for k := range byKey {
				if k.kind == c.Kind && k.name == c.Name {
					configured[k], matched = true, true
				}
			}
			if matched {
				continue
			}
		}
		k := recipientKey{c.Kind, c.Name, c.Host}
		configured[k] = true
		r := get(c.Kind, c.Name, c.Host)
		if len(r.Models) == 0 {
			r.Models = slices.Clone(c.Models)
		}
	}
	// A host whose worker calls were all simulated is the simulated pool,
	// for the judge's calls to it too.
	simulatedHost := map[string]bool{}
	for _, r := range byKey {
		if r.Kind == KindWorker && r.Items > 0 && r.SimulatedItems == r.Items {
			simulatedHost[r.Host] = true
		}
	}
	for k, r := range byKey {
		sent := r.Items > 0 || r.Requests > 0 || r.FailedItems > 0
		switch {
		case !sent:
			r.Status = StatusNothingSent
		case configured[k]:
			r.Status = StatusSent
		default:
			r.Status = StatusNotConfigured
		}
		slices.SortFunc(r.PII, func(a, b PIICount) int { return cmp.Compare(a.Kind, b.Kind) })
		r.Provider = providerOf(r, simulatedHost[r.Host])
		r.Content = contentOf(r, s)
		r.Retention = retentionOf(r.Kind, s.Retention)
		if kd, ok := kindOf(r.Kind); ok {
			r.AtRecipient = kd.AtRecipient
		}
		rec.Recipients = append(rec.Recipients, *r)
	}
	slices.SortFunc(rec.Recipients, func(a, b Recipient) int {
		return cmp.Or(cmp.Compare(kindRank(a.Kind), kindRank(b.Kind)), cmp.Compare(a.Name, b.Name), cmp.Compare(a.Host, b.Host))
	})
	if t.UnrecordedCalls > 0 {
		rec.Notes = append(rec.Notes, fmt.Sprintf("%d worker calls in the window have no recorded endpoint host and are not counted above: stored before hosts were recorded, or never sent (refused by a budget or an open circuit breaker)", t.UnrecordedCalls))
	}
	if !s.PIIEnabled {
		rec.Notes = append(rec.Notes, "PII pseudonymization is off now (ingest.pii.enabled: false): live traffic goes to the recipients as the tap received it")
	}
	return rec
}

// mergeModels returns the sorted union of a and b.
func mergeModels(a, b []string) []string {
	out := slices.Concat(a, b)
	slices.Sort(out)
	return slices.Compact(out)
}

// providerOf names who runs r's endpoint.
func providerOf(r *Recipient, simulatedHost bool) string {
	switch r.Kind {
	case KindWorker:
		return Provider(r.Host, r.Items > 0 && r.SimulatedItems == r.Items)
	case KindJudge:
		return Provider(r.Host, simulatedHost)
	case KindOTLP, KindOTLPLogs:
		return "OTLP/HTTP receiver (" + selfHosted(r.Host) + ")"
	case KindKafka:
		return "Kafka cluster (" + selfHosted(r.Host) + ")"
	case KindWebhook:
		return "webhook receiver (" + selfHosted(r.Host) + ")"
	case KindEmail:
		return "SMTP server (" + selfHosted(r.Host) + ")"
	}
	return "unknown"
}

// selfHosted says where a host is for the exporters' recipients: on
// loopback, a private network, or the host name itself.
func selfHosted(host string) string {
	switch p := Provider(strings.Split(host, ",")[0], false); {
	case strings.HasPrefix(p, "self-hosted"):
		return strings.TrimPrefix(strings.TrimSuffix(p, ")"), "self-hosted (")
	case host == "":
		return "host unknown"
	}
	return "remote"
}

// contentOf says what r's items carried.
func contentOf(r *Recipient, s Settings) string {
	switch r.Kind {
	case KindWorker, KindJudge:
		if r.Items == 0 {
			return "content (prompts and answers) when called"
		}
		live := r.Items - r.SuiteItems
		switch {
		case live == 0:
			return "content: regression-set cases only (prompts and answers)"
		case s.PIIEnabled:
			return fmt.Sprintf("content: prompts and answers; %d of %d calls on live traffic, pseudonymized before sending", live, r.Items)
		}
		return fmt.Sprintf("content: prompts and answers; %d of %d calls on live traffic, not pseudonymized (ingest.pii off)", live, r.Items)
	case KindOTLP:
		switch {
		case r.ContentItems > 0:
			return fmt.Sprintf("content: %d of %d spans carried prompts and answers (telemetry.capture_content)", r.ContentItems, r.Items)
		case s.CaptureContent:
			return "metadata only in the window; prompts and answers are captured from now on (telemetry.capture_content: true)"
		}
		return "metadata only: models, tokens, cost, status, timing (telemetry.capture_content: false)"
	case KindOTLPLogs:
		if r.ContentItems > 0 {
			return fmt.Sprintf("content: %d of %d events carried the judge's replies (telemetry.capture_content)", r.ContentItems, r.Items)
		}
		return "metadata only: outcomes, verdicts, judge, cost (telemetry.capture_content: false)"
	case KindKafka:
		if r.Items == 0 {
			return "content (whole exchanges) when published"
		}
		return fmt.Sprintf("content: %d whole exchanges (pseudonymized)", r.ContentItems)
	case KindWebhook, KindEmail:
		return "metadata only: verdict notices (no exchange text)"
	}
	return ""
}

// retentionOf says how long the platform keeps its record of a kind's flows.
func retentionOf(kind string, r store.RetentionConfig) string {
	switch kind {
	case KindWorker:
		return "steps " + ttl(r.Steps) + ", their texts " + ttl(bodies(r.Bodies, r.Steps)) + " (store.retention.steps, bodies)"
	case KindJudge:
		return "judgments and scores " + ttl(r.Scores) + ", judge replies " + ttl(bodies(r.Bodies, r.Scores)) + " (store.retention.scores, bodies)"
	}
	return "hourly counts only (flow_exports, no exchange text), kept until deleted"
}

// bodies is the TTL that empties texts: the bodies TTL when it is shorter
// than the row's.
func bodies(b, row time.Duration) time.Duration {
	if b > 0 && (row <= 0 || b < row) {
		return b
	}
	return row
}

// ttl words a TTL: "kept until deleted" for 0, else "kept 90 days" / "kept 36h".
func ttl(d time.Duration) string {
	switch {
	case d <= 0:
		return "kept until deleted"
	case d%(24*time.Hour) == 0:
		return fmt.Sprintf("kept %d days", d/(24*time.Hour))
	}
	return "kept " + d.String()
}

// retentionLines words store.retention, one line per table.
func retentionLines(r store.RetentionConfig) []string {
	return []string{
		"requests: " + ttl(r.Requests),
		"runs: " + ttl(r.Runs),
		"steps: " + ttl(r.Steps),
		"scores and judgments: " + ttl(r.Scores),
		"texts (inputs, outputs, messages, replies): " + ttl(r.Bodies),
		"done shadow work: " + ttl(r.Work),
	}
}

// DefaultWindow is the window of the record when none is given: a week, as a
// weekly report's.
const DefaultWindow = 7 * 24 * time.Hour

// MaxWindow bounds a window's length: ten years.
const MaxWindow = 10 * 365 * 24 * time.Hour

// ParseWindow reads a window's length as typed (the page's since, the API's):
// a positive Go duration up to MaxWindow; "" is DefaultWindow.
func ParseWindow(since string) (time.Duration, error) {
	since = strings.TrimSpace(since)
	if since == "" {
		return DefaultWindow, nil
	}
	d, err := time.ParseDuration(since)
	if err != nil || d <= 0 || d > MaxWindow {
		return 0, fmt.Errorf("window %q: want a positive duration up to %v, such as 24h or 168h", since, MaxWindow)
	}
	return d, nil
}
