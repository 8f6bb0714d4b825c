// Package dataflow is the record of data flows and third-party recipients:
// per window, every party outside the platform that received data — each
// worker's endpoint, the LLM judge, the OTLP receiver, the Kafka brokers,
// the notification sinks — with what it received (calls or items, HTTP
// requests, tokens, bytes, content or metadata only, the PII kinds
// pseudonymized before sending) and the retention and deletion settings
// that apply. It is built from what was sent (store.FlowReader: stored
// steps, judgments and rubric scores, and the exporters' counts a Meter
// writes), never from the configuration alone; configured recipients that
// received nothing are listed as such. The data-flows page, a suite
// report's section and `conductor-shadow data-flows` all render one Record
// (Build), so they cannot disagree.
package dataflow

import "github.com/conductor-shadow/conductor-shadow/store"

// Recipient kinds (Recipient.Kind, store.FlowExport.Kind). Kinds lists
// them in display order with what each receives.
const (
	KindWorker   = store.FlowWorker // a pool worker's endpoint: every worker call (steps)
	KindJudge    = store.FlowJudge  // the LLM judge: suite and live judging (judgments, rubric scores)
	KindOTLP     = "otlp"           // the OTLP/HTTP trace receiver (telemetry.otlp_endpoint)
	KindOTLPLogs = "otlp_logs"      // the same receiver's log endpoint: live judging's evaluation events
	KindKafka    = "kafka"          // the Kafka brokers the tap publishes exchanges to
	KindWebhook  = "webhook"        // the verdict notifications' webhook (notify.webhook)
	KindEmail    = "email"          // the verdict notifications' mail server (notify.email)
)

// Kind describes one kind of recipient.
type Kind struct {
	ID    string `json:"id"`    // Kind* constant
	Label string `json:"label"` // e.g. "Worker endpoint"
	// Item names what Recipient.Items counts: "call", "span", "message", "notice".
	Item string `json:"item"`
	// Receives says what an item carries.
	Receives string `json:"receives"`
	// CountedFrom says where the record's figures of this kind come from.
	CountedFrom string `json:"counted_from"`
	// AtRecipient says what the platform's retention and forget do about
	// what the recipient already holds.
	AtRecipient string `json:"at_recipient"`
}

// Kinds returns every recipient kind, in display order: the one list the
// page, the report section and the command show.
func Kinds() []Kind {
	const notReached = "kept under the recipient's own retention; store.retention and forget do not reach it"
	return []Kind{
		{ID: KindWorker, Label: "Worker endpoint", Item: "call",
			Receives:    "chat messages: the request's text (pseudonymized first on live traffic; regression-set text in suites), the subtask and earlier steps' answers; the answer comes back",
			CountedFrom: "stored steps with the endpoint host of each call (steps.endpoint_host, sent_bytes, received_bytes)",
			AtRecipient: "kept under the provider's terms; store.retention and forget do not reach it"},
		{ID: KindJudge, Label: "LLM judge", Item: "call",
			Receives:    "the request's text, the incumbent's and the candidate's answers (and the reference, in suites), to compare or score them",
			CountedFrom: "stored judgments (pairwise, canaries, live judging) and rubric scores with the judge's host",
			AtRecipient: "kept under the provider's terms; store.retention and forget do not reach it"},
		{ID: KindOTLP, Label: "OTLP trace receiver", Item: "span",
			Receives:    "spans of shadow runs, worker calls and HTTP requests: models, tokens, cost, status, timing; prompts and answers only with telemetry.capture_content",
			CountedFrom: "the span exporter's counts (flow_exports), per hour",
			AtRecipient: notReached},
		{ID: KindOTLPLogs, Label: "OTLP log receiver", Item: "event",
			Receives:    "live judging's gen_ai.evaluation.result events: outcome, judge, verdicts, cost; the judge's replies only with telemetry.capture_content",
			CountedFrom: "the log exporter's counts (flow_exports), per hour",
			AtRecipient: notReached},
		{ID: KindKafka, Label: "Kafka brokers", Item: "message",
			Receives:    "whole exchanges (request and the incumbent's answer, pseudonymized) on the exchanges topic",
			CountedFrom: "the producer's acknowledged messages (flow_exports), per hour",
			AtRecipient: "kept for the topic's retention (retention.ms at the brokers); forget does not delete published messages"},
		{ID: KindWebhook, Label: "Notification webhook", Item: "notice",
			Receives:    "verdict changes: candidate, verdict, gate figures, a link (no exchange text)",
			CountedFrom: "the notifier's delivered notices (flow_exports), per hour",
			AtRecipient: notReached},
		{ID: KindEmail, Label: "Notification mail server", Item: "notice",
			Receives:    "verdict changes by e-mail: candidate, verdict, gate figures, a link (no exchange text)",
			CountedFrom: "the notifier's delivered messages (flow_exports), per hour",
			AtRecipient: notReached},
	}
}

// kindOf returns the Kind with id, and whether there is one.
func kindOf(id string) (Kind, bool) {
	for _, k := range Kinds() {
		if k.ID == id {
			return k, true
		}
	}
	return Kind{}, false
}

// kindRank orders kinds as Kinds lists them; unknown kinds go last.
func kindRank(id string) int {
	for i, k := range Kinds() {
		if k.ID == id {
			return i
		}
	}
	return len(Kinds())
}
