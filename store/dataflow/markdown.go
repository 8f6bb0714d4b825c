package dataflow

import (
	"fmt"
	"strings"
	"time"
)

// Label is "Worker endpoint gpt-5": the kind's label and the recipient's name.
func (r Recipient) Label() string {
	kd, ok := kindOf(r.Kind)
	if !ok {
		return r.Kind + " " + r.Name
	}
	return kd.Label + " " + r.Name
}

// Received words what r received: "12 calls (3 on regression-set cases)",
// "40 spans (2 failed)", "nothing".
func (r Recipient) Received() string {
	if r.Items == 0 && r.FailedItems == 0 && r.Requests == 0 {
		return "nothing"
	}
	item := "item"
	if kd, ok := kindOf(r.Kind); ok {
		item = kd.Item
	}
	s := count(r.Items, item)
	var extra []string
	if r.SuiteItems > 0 {
		extra = append(extra, fmt.Sprintf("%d on regression-set cases", r.SuiteItems))
	}
	if r.FailedItems > 0 {
		extra = append(extra, fmt.Sprintf("%d failed", r.FailedItems))
	}
	if len(extra) > 0 {
		s += " (" + strings.Join(extra, ", ") + ")"
	}
	return s
}

// PIIText words r.PII: "email 3, person 1", or "none" when no rule fired.
func (r Recipient) PIIText() string {
	if len(r.PII) == 0 {
		return "none"
	}
	parts := make([]string, len(r.PII))
	for i, p := range r.PII {
		parts[i] = fmt.Sprintf("%s %d", p.Kind, p.Items)
	}
	return strings.Join(parts, ", ")
}

// count is "1 call" or "3 calls".
func count(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// cell escapes s for a Markdown table cell.
func cell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "\r", " ").Replace(s)
}

// Window words the window: "2026-03-02T06:00:00Z to 2026-03-09T06:00:00Z".
func (rec Record) Window() string {
	return rec.From.UTC().Format(time.RFC3339) + " to " + rec.To.UTC().Format(time.RFC3339)
}

// Markdown renders the record as a report section ("## Data flows and
// recipients"): one table row per recipient, then what each kind receives,
// retention, deletion and the notes.
func (rec Record) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n## Data flows and recipients\n\nEvery party outside the platform that received data from %s (exporters counted per hour, from %s), built from what was sent: stored steps, judgments and scores, and the exporters' counts.\n\n",
		rec.Window(), rec.ExportsFrom.UTC().Format(time.RFC3339))
	b.WriteString("| recipient | host | provider | status | received | requests | tokens in / out | bytes sent / received | content | PII pseudonymized before sending |\n")
	b.WriteString("| --- | --- | --- | --- | --- | ---: | ---: | ---: | --- | --- |\n")
	for _, r := range rec.Recipients {
		fmt.Fprintf(&b, "| %s | `%s` | %s | %s | %s | %d | %d / %d | %d / %d | %s | %s |\n",
			cell(r.Label()), cell(r.Host), cell(r.Provider), cell(r.Status), cell(r.Received()), r.Requests,
			r.InputTokens, r.OutputTokens, r.SentBytes, r.ReceivedBytes, cell(r.Content), cell(r.PIIText()))
	}
	if len(rec.Recipients) == 0 {
		b.WriteString("| (none) | | | | | | | | | |\n")
	}
	b.WriteString("\nWhat each kind receives, where the figures come from, and what holds at the recipient:\n\n")
	for _, k := range rec.Kinds {
		fmt.Fprintf(&b, "- **%s**: %s. Counted from %s. At the recipient: %s.\n", k.Label, k.Receives, k.CountedFrom, k.AtRecipient)
	}
	pii := "off"
	if rec.PIIEnabled {
		pii = "on, rules " + strings.Join(rec.PIIRules, ", ")
	}
	fmt.Fprintf(&b, "\nPseudonymization of live traffic (ingest.pii): %s. Retention here (store.retention): %s. Deletion: %s.\n",
		pii, strings.Join(rec.Retention, "; "), rec.Deletion)
	for _, n := range rec.Notes {
		fmt.Fprintf(&b, "\nNote: %s.\n", n)
	}
	return b.String()
}
