package web

import (
	"strconv"
	"time"

	"github.com/conductor-shadow/conductor-shadow/store"
)

// The traces list shows one line per trace: the pair (the trace's candidate
// against the incumbent's run, store.TraceSummary.Pair*) as deltas, candidate
// minus incumbent, with the absolute figures in each cell's title.

// sortHeader is one sortable column head of the traces list.
type sortHeader struct {
	Key   string // store.TraceSort*
	Label string
	Title string
	URL   string // the list sorted by Key (or the other way when it already is)
	Mark  string // "▼" descending, "▲" ascending, "" when the list is not sorted by Key
}

// sortHeaders are the traces list's sortable column heads for v's query.
func (v tracesView) sortHeaders() map[string]sortHeader {
	u := urls{v.Meta.Base}
	heads := []sortHeader{
		{Key: store.TraceSortCost, Label: "Δ cost", Title: "candidate minus incumbent cost, USD; sort: largest increase first"},
		{Key: store.TraceSortLatency, Label: "Δ latency", Title: "candidate minus incumbent latency; sort: largest increase first"},
		{Key: store.TraceSortAgreement, Label: "Agreement", Title: "both answered ok with equal answers (after normalising); sort: disagreements first"},
		{Key: store.TraceSortJudgment, Label: "Judgment", Title: "the pair's judged outcome for the candidate; sort: losses first"},
	}
	out := make(map[string]sortHeader, len(heads))
	for _, h := range heads {
		h.URL = u.tracesWith(v.Query.sorted(h.Key))
		if v.Query.Sort == h.Key {
			h.Mark = "▼"
			if v.Query.Asc {
				h.Mark = "▲"
			}
		}
		out[h.Key] = h
	}
	return out
}

// newestURL is the list in its default order (newest first), same filters.
func (v tracesView) newestURL() string {
	q := v.Query
	q.Sort, q.Asc, q.AfterValue, q.AfterID, q.Before, q.BeforeID = "", false, 0, "", time.Time{}, ""
	return urls{v.Meta.Base}.tracesWith(q)
}

// deltaCell is one delta of a trace's pair: its text, its title (the
// absolute figures) and its class ("worse" for a rise, "better" for a fall).
type deltaCell struct {
	Text, Title, Class string
}

// deltaClass colours a difference where more is worse (cost, latency).
func deltaClass(d float64) string {
	switch {
	case d > 0:
		return "delta worse"
	case d < 0:
		return "delta better"
	}
	return "delta"
}

// costDelta is a candidate's cost against the incumbent's (USD).
func costDelta(inc, cand float64) deltaCell {
	d := cand - inc
	return deltaCell{Text: fmtDeltaUSD(d), Class: deltaClass(d), Title: "incumbent " + fmtUSD(inc) + ", candidate " + fmtUSD(cand)}
}

// latencyDelta is a candidate's latency against the incumbent's (ms), "—"
// unless both are known.
func latencyDelta(inc, cand float64, known bool) deltaCell {
	if !known {
		return deltaCell{Text: "—", Title: "a latency of the pair is unknown"}
	}
	d := cand - inc
	return deltaCell{Text: fmtDeltaMs(d), Class: deltaClass(d), Title: "incumbent " + fmtLatency(inc) + ", candidate " + fmtLatency(cand)}
}

// pairCost is the pair's cost difference, "—" when unpaired.
func pairCost(r store.TraceSummary) deltaCell {
	if !r.Paired {
		return deltaCell{Text: "—", Title: "no incumbent and candidate run to compare"}
	}
	return costDelta(r.IncumbentCostUSD, r.IncumbentCostUSD+r.PairCostDeltaUSD)
}

// pairLatency is the pair's latency difference.
func pairLatency(r store.TraceSummary) deltaCell {
	return latencyDelta(r.IncumbentMs, r.IncumbentMs+r.PairLatencyDeltaMs, r.PairLatencyKnown)
}

// agreementCell is the pair's agreement: "agree", "differ" or "—" when not
// both answered ok.
func agreementCell(a int8) deltaCell {
	switch a {
	case 1:
		return deltaCell{Text: "agree", Class: "status status-ok"}
	case 0:
		return deltaCell{Text: "differ", Class: "status status-warn", Title: "the answers differ after normalising"}
	}
	return deltaCell{Text: "—", Title: "not both runs answered ok"}
}

// pairTitle names both sides of a trace's pair.
func pairTitle(r store.TraceSummary) string {
	if r.PairCandidate == "" {
		return "no candidate run"
	}
	t := r.PairCandidate + " against " + r.PairIncumbent
	if r.PairIncumbent == "" {
		t = r.PairCandidate + " (no incumbent run)"
	}
	if r.PairCandidates > 1 {
		t += "; the trace has " + strconv.Itoa(r.PairCandidates) + " candidate pipelines (filter by candidate to pick one)"
	}
	return t
}

// categoryNote is ", category X" or "" without one.
func categoryNote(c string) string {
	if c == "" {
		return ""
	}
	return ", category " + c
}
