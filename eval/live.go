package eval

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/conductor-shadow/conductor-shadow/eval/gate"
	"github.com/conductor-shadow/conductor-shadow/ingest/segment"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// LiveSection is the running verdict on live shadow traffic in [From, To):
// per candidate the PASS-side anytime-valid sequential test on the agreement
// of final answers, overall and per segment with Holm's correction
// (gate.LiveVerdicts, which names the method and why FAIL needs grades).
type LiveSection struct {
	From       time.Time           `json:"from"`
	To         time.Time           `json:"to"`
	Segments   store.SegmentFilter `json:"segments"`   // the filter the pairs were read with, empty for all traffic
	Correction string              `json:"correction"` // gate.LiveCorrection
	Verdicts   []gate.LiveVerdict  `json:"verdicts"`   // by candidate; empty without live pairs
}

// LivePairs turns the store's agreement pairs into the sequential test's
// input, naming each pair's segments as suite reports do (SegmentNames:
// "lang:<iso>", "table", "code", "len:<bucket>", "lang:<iso>+table", …).
func LivePairs(pairs []store.AgreementPair) []gate.LivePair {
	out := make([]gate.LivePair, len(pairs))
	for i, p := range pairs {
		out[i] = gate.LivePair{Candidate: p.Candidate, Agree: p.Agree,
			Segments: SegmentNames(segment.Segments{Language: p.Language, HasTable: p.HasTable, HasCode: p.HasCode, LengthBucket: p.LengthBucket})}
	}
	return out
}

// LiveVerdicts reads q's agreement pairs from la (store.LiveAgreement, in
// time order per candidate) and computes the running verdicts under policy p
// (gate.LiveVerdicts, advice in days of the window's traffic). It is the one
// computation behind the overview's running verdict and the reports' live
// section. It returns the store's error wrapped, or q's Validate error.
func LiveVerdicts(ctx context.Context, la store.LiveAgreement, q store.OverviewQuery, p gate.Policy) (*LiveSection, error) {
	pairs, truncated, err := la.AgreementSequence(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("eval: live verdicts: %w", err)
	}
	vs, err := gate.LiveVerdicts(LivePairs(pairs), q.To.Sub(q.From), truncated, p)
	if err != nil {
		return nil, fmt.Errorf("eval: live verdicts: %w", err)
	}
	if vs == nil {
		vs = []gate.LiveVerdict{}
	}
	return &LiveSection{From: q.From, To: q.To, Segments: q.Segments, Correction: gate.LiveCorrection, Verdicts: vs}, nil
}

// liveDayBucket is the bucket width LiveVerdicts' queries name (the pairs do
// not depend on it; OverviewQuery requires one).
const liveDayBucket = 86400

// Markdown renders the section: per candidate the running verdict, its
// progress and advice, then a segment table with raw and Holm-adjusted
// anytime-valid p-values.
func (l *LiveSection) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n## Running verdict on live traffic\n\n")
	fmt.Fprintf(&b, "Live shadow traffic from %s to %s. PASS-side anytime-valid sequential test (betting confidence sequence, Waudby-Smith & Ramdas 2024, adaptive bets) on the agreement of final answers: a disagreement counts as a −1 lower bound of the per-case difference, so PASS (\"at most the margin worse\") is valid and FAIL needs graded cases. Per segment: %s.\n",
		mdTime(l.From), mdTime(l.To), mdText(l.Correction))
	if len(l.Verdicts) == 0 {
		b.WriteString("\nNo live request was answered by both the incumbent and a candidate in this window.\n")
		return b.String()
	}
	for _, v := range l.Verdicts {
		fmt.Fprintf(&b, "\n### %s: %s\n\n", mdText(v.Candidate), v.Verdict)
		fmt.Fprintf(&b, "- %d live pairs, answers differ on %d (%s)\n", v.Pairs, v.Disagree, pct(float64(v.Disagree)/float64(max(v.Pairs, 1))))
		fmt.Fprintf(&b, "- %s\n", mdText(v.Text))
		fmt.Fprintf(&b, "- Progress to PASS: %.0f%%; advice: %s\n", 100*v.Progress, mdText(v.Advice))
		if v.Truncated {
			fmt.Fprintf(&b, "- Only the first %d pairs of the window were read.\n", v.Pairs)
		}
		if len(v.Segments) == 0 {
			continue
		}
		b.WriteString("\n| segment | pairs | differ | p (anytime) | Holm-adjusted p | verdict | progress | advice |\n")
		b.WriteString("|---|--:|--:|--:|--:|---|--:|---|\n")
		for _, s := range v.Segments {
			p, adj := "-", "-"
			if s.Tested {
				p, adj = fmt.Sprintf("%.4g", s.P), fmt.Sprintf("%.4g", s.AdjustedP)
			}
			fmt.Fprintf(&b, "| %s | %d | %d | %s | %s | %s | %.0f%% | %s |\n",
				mdText(s.Segment), s.Pairs, s.Disagree, p, adj, s.Verdict, 100*s.Progress, mdText(s.Advice))
		}
	}
	return b.String()
}
