package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Kinds of recipient the store counts from its own tables: a worker's calls
// are its steps, the judge's its judgments and rubric scores. The other kinds
// (OTLP, Kafka, notification sinks) are counted by their exporters in
// flow_exports; the full list, in display order, is store/dataflow.Kinds.
const (
	FlowWorker = "worker"
	FlowJudge  = "judge"
)

// FlowExport is one process's cumulative count, in one UTC hour, of what one
// exporter sent to one recipient outside the platform (OTLP spans, Kafka
// messages, notices). Written again with higher counts as the hour goes on;
// key (WindowStart, Kind, Recipient, Host, ProcessID, PIIKind), the last
// write wins. PIIKind "" holds the counts; a row with a PIIKind holds in
// Items how many of the hour's items carried text in which that kind was
// pseudonymized (its other counts are 0).
type FlowExport struct {
	WindowStart  time.Time `json:"window_start"`  // start of the UTC hour
	ProcessID    string    `json:"process_id"`    // random per process start
	Kind         string    `json:"kind"`          // dataflow.KindOTLP, …
	Recipient    string    `json:"recipient"`     // "traces", the topic, the sink
	Host         string    `json:"host"`          // host[:port], or the brokers joined by ","
	PIIKind      string    `json:"pii_kind"`      // "" for the counts row
	Items        int64     `json:"items"`         // spans, messages or notices delivered
	ContentItems int64     `json:"content_items"` // of Items, those carrying exchange text
	Requests     int64     `json:"requests"`      // HTTP requests, produce batches or SMTP sessions (attempts)
	SentBytes    int64     `json:"sent_bytes"`    // bodies (HTTP, Kafka key + value, the message), bytes
	FailedItems  int64     `json:"failed_items"`  // items the recipient did not take
	UpdatedAt    time.Time `json:"updated_at"`
}

// FlowExportWriter stores exporters' counts (store/dataflow.Meter).
type FlowExportWriter interface {
	// InsertFlowExports stores counts, keyed as FlowExport says; a later
	// write of a key replaces the earlier one.
	InsertFlowExports(ctx context.Context, rows []FlowExport) error
}

// FlowReader reads what left the platform in a window, for the record of data
// flows (store/dataflow.Build).
type FlowReader interface {
	// FlowTotals sums, for [from, to): the worker calls (steps started in
	// the window with an endpoint host), the judge calls (judgments judged
	// and rubric scores created in it), the PII kinds pseudonymized in the
	// requests those calls carried, and the exporters' counts of the hours
	// the window overlaps. An empty or inverted window is an error.
	FlowTotals(ctx context.Context, from, to time.Time) (FlowTotals, error)
}

// FlowTotals is what FlowReader.FlowTotals found.
type FlowTotals struct {
	Calls   []FlowCalls       `json:"calls"`   // by kind, name, host
	Exports []FlowExportTotal `json:"exports"` // by kind, name, host
	PII     []FlowPII         `json:"pii"`     // by kind, name, host, PII kind
	// UnrecordedCalls counts the window's steps of candidate and suite runs
	// without an endpoint host: stored before hosts were recorded, or never
	// sent (refused by a budget or an open breaker).
	UnrecordedCalls int64 `json:"unrecorded_calls"`
}

// FlowCalls are the model calls one recipient (a worker or the judge at one
// host) received.
type FlowCalls struct {
	Kind           string   `json:"kind"` // FlowWorker or FlowJudge
	Name           string   `json:"name"` // the pool worker
	Host           string   `json:"host"`
	Models         []string `json:"models"`          // model ids sent (workers) or answered with (judges)
	Calls          int64    `json:"calls"`           // model calls
	Requests       int64    `json:"requests"`        // HTTP requests (attempts, retries included)
	SuiteCalls     int64    `json:"suite_calls"`     // of Calls, on regression-set cases
	SimulatedCalls int64    `json:"simulated_calls"` // of Calls, in runs answered by the simulated pool
	InputTokens    int64    `json:"input_tokens"`
	OutputTokens   int64    `json:"output_tokens"`
	SentBytes      int64    `json:"sent_bytes"`
	ReceivedBytes  int64    `json:"received_bytes"`
}

// FlowExportTotal sums FlowExport counts rows of one recipient.
type FlowExportTotal struct {
	Kind         string `json:"kind"`
	Name         string `json:"name"`
	Host         string `json:"host"`
	Items        int64  `json:"items"`
	ContentItems int64  `json:"content_items"`
	Requests     int64  `json:"requests"`
	SentBytes    int64  `json:"sent_bytes"`
	FailedItems  int64  `json:"failed_items"`
}

// FlowPII counts the items (calls, messages) of one recipient whose text had
// one PII kind pseudonymized before it was sent (requests.metadata
// ['pii_rules'] of the calls' requests; the Kafka exporter's own counts).
type FlowPII struct {
	Kind    string `json:"kind"`
	Name    string `json:"name"`
	Host    string `json:"host"`
	PIIKind string `json:"pii_kind"`
	Items   int64  `json:"items"`
}

// InsertFlowExports implements FlowExportWriter.
func (s *sqlStore) InsertFlowExports(ctx context.Context, rows []FlowExport) error {
	return insert(ctx, s, "flow_exports", rows)
}

// flowCallsSQL selects one row per model call that left the platform in the
// window: kind, name, host, model, request id and the figures FlowCalls
// sums (n_calls, n_requests, is_suite, is_simulated, n_in, n_out, n_sent,
// n_received: named apart from FlowCalls' columns, which alias their sums). Steps count when they have an endpoint host; judgments and rubric
// scores when they have a judge host.
func (s *sqlStore) flowCallsSQL() string {
	win := func(col string) string {
		return col + " >= {from:DateTime64(3, 'UTC')} AND " + col + " < {to:DateTime64(3, 'UTC')}"
	}
	return fmt.Sprintf(`SELECT '%[2]s' AS kind, st.worker AS name, st.endpoint_host AS host, st.model AS model, r.request_id AS request_id,
    toInt64(1) AS n_calls, toInt64(st.attempt) AS n_requests, toBool(r.suite_run_id != '') AS is_suite, toBool(r.simulated) AS is_simulated,
    st.input_tokens AS n_in, st.output_tokens AS n_out, st.sent_bytes AS n_sent, st.received_bytes AS n_received
FROM (SELECT run_id, worker, endpoint_host, model, attempt, input_tokens, output_tokens, sent_bytes, received_bytes
      FROM %[1]s.steps FINAL WHERE %[4]s AND endpoint_host != '') AS st
LEFT JOIN (SELECT run_id, request_id, suite_run_id, simulated FROM %[1]s.runs FINAL
      WHERE run_id IN (SELECT run_id FROM %[1]s.steps WHERE %[4]s AND endpoint_host != '')) AS r ON st.run_id = r.run_id
UNION ALL
SELECT '%[3]s', judge_worker, judge_host, judge, request_id, toInt64(judge_calls), toInt64(judge_requests), toBool(suite_run_id != ''), toBool(0),
    tokens_in, tokens_out, sent_bytes, received_bytes
FROM %[1]s.judgments FINAL WHERE %[5]s AND judge_host != ''
UNION ALL
SELECT '%[3]s', judge_worker, judge_host, '', request_id, toInt64(judge_calls), toInt64(judge_requests), toBool(1), toBool(0),
    judge_tokens_in, judge_tokens_out, judge_sent_bytes, judge_received_bytes
FROM %[1]s.scores FINAL WHERE %[6]s AND judge_host != ''`,
		s.db, FlowWorker, FlowJudge, win("started_at"), win("judged_at"), win("created_at"))
}

// FlowTotals implements FlowReader with four statements: the calls, their
// requests' PII kinds, the calls without a host, and the exporters' counts.
func (s *sqlStore) FlowTotals(ctx context.Context, from, to time.Time) (FlowTotals, error) {
	if from.IsZero() || to.IsZero() || !to.After(from) {
		return FlowTotals{}, errors.New("store: flow totals: the window needs a start before its end")
	}
	if err := s.check(ctx); err != nil {
		return FlowTotals{}, fmt.Errorf("store: flow totals: %w", err)
	}
	p := Params{}.Time("from", from).Time("to", to)
	calls := s.flowCallsSQL()
	var out FlowTotals
	var err error
	out.Calls, err = queryRows[FlowCalls](ctx, s.t, fmt.Sprintf(`SELECT kind, name, host,
    arraySort(groupUniqArrayIf(model, model != '')) AS models,
    sum(n_calls) AS calls, sum(n_requests) AS requests, sumIf(n_calls, is_suite) AS suite_calls, sumIf(n_calls, is_simulated) AS simulated_calls,
    sum(n_in) AS input_tokens, sum(n_out) AS output_tokens, sum(n_sent) AS sent_bytes, sum(n_received) AS received_bytes
FROM (%s)
GROUP BY kind, name, host
ORDER BY kind, name, host`, calls), p)
	if err != nil {
		return FlowTotals{}, fmt.Errorf("store: flow totals: calls: %w", err)
	}
	// The rules that fired on a call's request (requests.metadata['pii_rules'],
	// ingest.MetadataPIIRules: sorted names joined by ",").
	out.PII, err = queryRows[FlowPII](ctx, s.t, fmt.Sprintf(`SELECT c.kind AS kind, c.name AS name, c.host AS host, rule AS pii_kind, sum(c.n_calls) AS items
FROM (%[2]s) AS c
INNER JOIN (SELECT request_id, metadata['pii_rules'] AS rules FROM %[1]s.requests FINAL
    WHERE metadata['pii_rules'] != '' AND request_id IN (SELECT request_id FROM (%[2]s))) AS q ON c.request_id = q.request_id
ARRAY JOIN splitByChar(',', q.rules) AS rule
GROUP BY kind, name, host, pii_kind
ORDER BY kind, name, host, pii_kind`, s.db, calls), p)
	if err != nil {
		return FlowTotals{}, fmt.Errorf("store: flow totals: pii: %w", err)
	}
	type count struct {
		N int64 `json:"n"`
	}
	un, err := queryRows[count](ctx, s.t, fmt.Sprintf(`SELECT count() AS n
FROM (SELECT run_id FROM %[1]s.steps FINAL
      WHERE started_at >= {from:DateTime64(3, 'UTC')} AND started_at < {to:DateTime64(3, 'UTC')} AND endpoint_host = '') AS st
INNER JOIN (SELECT run_id FROM %[1]s.runs FINAL WHERE mode = '%[2]s' OR suite_run_id != '') AS r ON st.run_id = r.run_id`, s.db, ModeCandidate), p)
	if err != nil {
		return FlowTotals{}, fmt.Errorf("store: flow totals: unrecorded calls: %w", err)
	}
	if len(un) > 0 {
		out.UnrecordedCalls = un[0].N
	}
	rows, err := queryRows[FlowExport](ctx, s.t, fmt.Sprintf(`SELECT kind, recipient, host, pii_kind,
    sum(items) AS items, sum(content_items) AS content_items, sum(requests) AS requests, sum(sent_bytes) AS sent_bytes, sum(failed_items) AS failed_items
FROM %s.flow_exports FINAL
WHERE window_start >= toStartOfHour({from:DateTime64(3, 'UTC')}) AND window_start < {to:DateTime64(3, 'UTC')}
GROUP BY kind, recipient, host, pii_kind
ORDER BY kind, recipient, host, pii_kind`, s.db), p)
	if err != nil {
		return FlowTotals{}, fmt.Errorf("store: flow totals: exports: %w", err)
	}
	for _, r := range rows {
		if r.PIIKind != "" {
			out.PII = append(out.PII, FlowPII{Kind: r.Kind, Name: r.Recipient, Host: r.Host, PIIKind: r.PIIKind, Items: r.Items})
			continue
		}
		out.Exports = append(out.Exports, FlowExportTotal{Kind: r.Kind, Name: r.Recipient, Host: r.Host, Items: r.Items,
			ContentItems: r.ContentItems, Requests: r.Requests, SentBytes: r.SentBytes, FailedItems: r.FailedItems})
	}
	return out, nil
}

// The SQL stores keep the record of data flows: they have both roles.
var (
	_ FlowReader       = (*sqlStore)(nil)
	_ FlowExportWriter = (*sqlStore)(nil)
)
