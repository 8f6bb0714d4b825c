package eval

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/conductor-shadow/conductor-shadow/eval/gate"
	"github.com/conductor-shadow/conductor-shadow/ingest/segment"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// LiveQuery says which live sequences a look reads, and when. The verdict of
// a sequence depends only on its candidate version and AsOf: no window of a
// page or a report changes it.
type LiveQuery struct {
	// Candidates limits the look to these pipelines; empty: every recorded
	// sequence's pipeline.
	Candidates []string
	// Versions pins a candidate's version (candidate → version); a candidate
	// not in it is read at its newest sequence (the one that started last).
	Versions map[string]string
	// AsOf is the look's time (zero: now). The sequence is read up to
	// AsOf − live.settle.
	AsOf time.Time
	// Window, when set (From before To), adds each candidate's coverage in
	// that window (the overview's), shown next to the verdict; it changes
	// no verdict.
	WindowFrom, WindowTo time.Time
	// PageSize is how many observations one store read returns (0:
	// store.DefaultLivePage); it bounds memory, never the verdict.
	PageSize int
}

// LiveCandidate is one candidate version's live verdict at one look, with
// what it was computed from.
type LiveCandidate struct {
	Candidate string `json:"candidate"`
	Version   string `json:"version"`
	// StartedAt is the sequence's start (its first live run); Through the
	// end of what the look read (AsOf − live.settle).
	StartedAt time.Time `json:"started_at"`
	Through   time.Time `json:"through"`
	gate.LiveVerdict
	// Coverage is the coverage of the sequence so far (from its start to its
	// last run read), per dimension and cell (store.LiveCoverage), with its
	// chi-square tests and the reasons of the shed exchanges; WindowCoverage
	// the same counts over the query's window, when it set one.
	Coverage       []gate.CoverageCounts `json:"coverage"`
	CoverageChecks []gate.CoverageCheck  `json:"coverage_checks,omitempty"`
	ShedReasons    []store.ReasonCount   `json:"shed_reasons,omitempty"`
	WindowCoverage []gate.CoverageCounts `json:"window_coverage,omitempty"`
	// Judges are the live judges' records over the sequence (canaries,
	// position consistency).
	Judges []store.JudgeStat `json:"judges,omitempty"`
}

// LiveSection is the live verdicts of one look: per candidate version, the
// one live sequence since its shadowing started (gate.LiveSequence), read as
// of AsOf. The overview, a report's live section and the notifier all show
// this computation.
type LiveSection struct {
	AsOf     time.Time       `json:"as_of"`
	Rule     string          `json:"rule"` // gate.LiveRule
	Verdicts []LiveCandidate `json:"verdicts"`
}

// LiveVerdicts reads, for each sequence q selects (lr.SequenceStarts), every
// observation from its start to q.AsOf − live.settle, page by page
// (store.LivePage), replays it through one
// gate.LiveSequence under policy p and reads its verdict with the live
// judge's trust rows (gate.CheckJudge) and the coverage check
// (gate.CheckCoverage). It returns the store's error wrapped, or p's.
func LiveVerdicts(ctx context.Context, lr store.LiveReader, q LiveQuery, p gate.Policy) (*LiveSection, error) {
	if lr == nil {
		return nil, fmt.Errorf("eval: live verdicts: %w", store.NotSupported("store.LiveReader"))
	}
	asOf := q.AsOf
	if asOf.IsZero() {
		asOf = time.Now()
	}
	asOf = asOf.UTC()
	starts, err := lr.SequenceStarts(ctx)
	if err != nil {
		return nil, fmt.Errorf("eval: live verdicts: %w", err)
	}
	sec := &LiveSection{AsOf: asOf, Rule: gate.LiveRule, Verdicts: []LiveCandidate{}}
	for _, s := range selectSequences(starts, q) {
		c, err := liveCandidate(ctx, lr, s, asOf, q, p)
		if err != nil {
			return nil, fmt.Errorf("eval: live verdict of %s version %s: %w", s.Pipeline, s.PipelineVersion, err)
		}
		sec.Verdicts = append(sec.Verdicts, c)
	}
	return sec, nil
}

// selectSequences picks q's sequences out of starts: per candidate its
// pinned version, else its newest sequence.
func selectSequences(starts []store.SequenceStart, q LiveQuery) []store.SequenceStart {
	var pinned []store.SequenceStart
	var rest []store.SequenceStart
	for _, s := range starts {
		if len(q.Candidates) > 0 && !slices.Contains(q.Candidates, s.Pipeline) {
			continue
		}
		if v, ok := q.Versions[s.Pipeline]; ok {
			if v == s.PipelineVersion {
				pinned = append(pinned, s)
			}
			continue
		}
		rest = append(rest, s)
	}
	out := append(pinned, store.LatestSequences(rest)...)
	slices.SortFunc(out, func(a, b store.SequenceStart) int { return strings.Compare(a.Pipeline, b.Pipeline) })
	return out
}

func liveCandidate(ctx context.Context, lr store.LiveReader, s store.SequenceStart, asOf time.Time, q LiveQuery, p gate.Policy) (LiveCandidate, error) {
	rules := p.LiveRules()
	c := LiveCandidate{Candidate: s.Pipeline, Version: s.PipelineVersion, StartedAt: s.StartedAt, Through: asOf.Add(-rules.Settle)}
	seq, err := gate.NewLiveSequence(p)
	if err != nil {
		return c, err
	}
	var ev gate.LiveEvidence
	if c.Through.After(c.StartedAt) {
		lq := store.LiveQuery{Pipeline: s.Pipeline, PipelineVersion: s.PipelineVersion, From: s.StartedAt, To: c.Through}
		// Replay the sequence page by page, in start order.
		page := store.LivePage{Limit: cmp.Or(q.PageSize, store.DefaultLivePage)}
		var last time.Time
		n := 0
		for {
			obs, err := lr.LiveObservations(ctx, lq, page)
			if err != nil {
				return c, err
			}
			for _, o := range obs {
				seq.Observe(LiveObs(o))
			}
			n += len(obs)
			if len(obs) == 0 {
				break
			}
			o := obs[len(obs)-1]
			page.AfterAt, page.AfterID, last = o.StartedAt, o.RequestID, o.StartedAt
			if len(obs) < page.Limit {
				break
			}
		}
		// Coverage up to the sequence's last run: a version no longer
		// shadowed is not losing the traffic after it.
		cq := lq
		if n > 0 && last.Add(time.Millisecond).Before(cq.To) {
			cq.To = last.Add(time.Millisecond)
		}
		cov, err := lr.LiveCoverage(ctx, cq)
		if err != nil {
			return c, err
		}
		c.Coverage, c.ShedReasons = coverageCounts(cov.Cells), cov.Reasons
		if c.Judges, err = lr.LiveJudgeStats(ctx, lq.Judgments()); err != nil {
			return c, err
		}
		if days := c.Through.Sub(c.StartedAt).Hours() / 24; days > 0 {
			ev.PerDay = float64(n) / days
		}
	}
	if !q.WindowFrom.IsZero() && q.WindowTo.After(q.WindowFrom) {
		cov, err := lr.LiveCoverage(ctx, store.LiveQuery{Pipeline: s.Pipeline, PipelineVersion: s.PipelineVersion, From: q.WindowFrom, To: q.WindowTo})
		if err != nil {
			return c, err
		}
		c.WindowCoverage = coverageCounts(cov.Cells)
	}
	review := liveReview(ctx, lr, c.Judges, p.Confidence)
	c.LiveVerdict, c.CoverageChecks = LiveLook(p, seq, c.Judges, review, c.Coverage, ev.PerDay)
	return c, nil
}

// liveReview is the human-review evidence of a sequence's live judges for
// the judge rules (min_judge_kappa, min_reviews, require_review): every
// reviewed pair of each judge (suite and live), and of several judges the
// weakest — one never reviewed, else the lowest lower bound of κ. A store
// that cannot read reviews, or a failed read, gives evidence with a Note
// saying so (the rules then read the judge as not validated).
func liveReview(ctx context.Context, lr store.LiveReader, judges []store.JudgeStat, confidence float64) gate.ReviewEvidence {
	if len(judges) == 0 {
		return gate.ReviewEvidence{}
	}
	rr, ok := lr.(store.ReviewReader)
	if !ok {
		return gate.ReviewEvidence{Note: "this store cannot read reviews (" + store.NotSupported("store.ReviewReader").Error() + ")"}
	}
	rows, err := AllReviews(ctx, rr, store.ReviewedQuery{})
	if err != nil {
		return gate.ReviewEvidence{Note: "the reviews could not be read: " + clip(err.Error(), 200)}
	}
	h := AgreementOf(rows, confidence)
	var weakest *gate.ReviewEvidence
	for _, j := range judges {
		a, ok := h.Judge(j.Judge)
		if !ok {
			return gate.ReviewEvidence{Note: "no pair of live judge " + j.Judge + " was reviewed yet"}
		}
		ev := a.Evidence()
		if weakest == nil || kappaLower(ev) < kappaLower(*weakest) {
			weakest = &ev
		}
	}
	return *weakest
}

// kappaLower is ev's κ lower confidence bound, −2 (below any κ) without one.
func kappaLower(ev gate.ReviewEvidence) float64 {
	if ev.Kappa == nil {
		return -2
	}
	return ev.Kappa.Interval.Low
}

// LiveLook reads seq's verdict with what a look adds to its own tests: the
// live judges' trust rows (gate.CheckJudge on LiveJudgeEvidence of the
// sequence's judged pairs and judges' canaries, with review, the judges'
// agreement with human reviewers: liveReview) and the coverage check
// (gate.CheckCoverage on coverage); perDay is the observations per day so
// far, for the advice. It is the one decision LiveVerdicts and `validity
// --live` take.
func LiveLook(p gate.Policy, seq *gate.LiveSequence, judges []store.JudgeStat, review gate.ReviewEvidence, coverage []gate.CoverageCounts, perDay float64) (gate.LiveVerdict, []gate.CoverageCheck) {
	ev := gate.LiveEvidence{PerDay: perDay}
	je := LiveJudgeEvidence(seq.Counts(), judges)
	je.Review = review
	ev.JudgeRows, ev.JudgeWithheld = gate.CheckJudge(p, je)
	var checks []gate.CoverageCheck
	ev.CoverageRows, ev.CoverageWithheld, checks = gate.CheckCoverage(p, coverage, seq.ConstantInclusion())
	return seq.Verdict(ev), checks
}

// LiveObs turns a stored observation into the live sequence's: a failed
// candidate run (error, budget_exceeded) against an answered incumbent is a
// loss; both answered (the candidate ok or answered by its fallback) it is
// the pair's judgment (win +1, tie 0, inconsistent a tie, loss −1, error
// and unjudged — sampled, never judged — non-response) or not sampled; without an incumbent answer it is unpaired.
// Its segments are SegmentNames of the request and "app:<app>".
func LiveObs(o store.LiveObservation) gate.LiveObs {
	lo := gate.LiveObs{At: o.StartedAt, JudgedAt: o.JudgedAt, InclusionProb: o.InclusionProb,
		IncumbentUSD: o.IncumbentCostUSD, CandidateUSD: o.CostUSD, IncumbentMs: o.IncumbentLatencyMs, CandidateMs: o.LatencyMs,
		Segments: append(SegmentNames(segment.Segments{Language: o.Language, HasTable: o.HasTable, HasCode: o.HasCode, LengthBucket: o.LengthBucket}), "app:"+o.App)}
	switch {
	case !o.IncumbentFound || o.IncumbentStatus != store.StatusOK:
		lo.Kind = gate.LiveUnpaired
	case o.Status != store.StatusOK && o.Status != store.StatusPlanUnparsable:
		lo.Kind = gate.LiveFailed
	default:
		switch o.Outcome {
		case store.JudgmentWin:
			lo.Kind, lo.Score = gate.LiveJudged, 1
		case store.JudgmentLoss:
			lo.Kind, lo.Score = gate.LiveJudged, -1
		case store.JudgmentTie:
			lo.Kind = gate.LiveJudged
		case store.JudgmentInconsistent:
			lo.Kind, lo.Inconsistent = gate.LiveJudged, true
		case store.JudgmentError:
			lo.Kind = gate.LiveJudgeError
		case store.JudgmentUnjudged:
			lo.Kind = gate.LiveNotJudged
		default:
			lo.Kind = gate.LiveUnjudged
		}
	}
	return lo
}

// LiveJudgeEvidence is what the live judges showed on a sequence, for
// gate.CheckJudge: the judged pairs and their position consistency as the
// sequence counted them, its non-response (judge errors, sampled pairs never
// judged, judgments after the settle time, pairs sampled below the floor) as the judge errors of both
// arms (a pair's failed judgment fails both), and the judges' live canaries.
func LiveJudgeEvidence(c gate.LiveCounts, judges []store.JudgeStat) gate.JudgeEvidence {
	var names []string
	ev := gate.JudgeEvidence{Pairwise: true, Judged: c.Judged, Consistent: c.Judged - c.Inconsistent}
	for _, j := range judges {
		names = append(names, j.Judge)
		ev.Canaries += int(j.Canaries)
		for k := range j.CanariesFailed {
			ev.CanaryFailures = append(ev.CanaryFailures, fmt.Sprintf("%s: live canary %d of %d failed", j.Judge, k+1, j.CanariesFailed))
		}
	}
	if len(names) > 0 || c.Judged > 0 {
		ev.Judge = strings.Join(names, ", ")
		if ev.Judge == "" {
			ev.Judge = "live judge"
		}
	}
	sampled := c.Judged + c.Lost
	ev.Incumbent = gate.ArmErrors{Side: "incumbent", Errors: c.Lost, Total: sampled}
	ev.Candidate = gate.ArmErrors{Side: "candidate", Errors: c.Lost, Total: sampled}
	return ev
}

// coverageCounts turns the store's cells into the coverage check's.
func coverageCounts(cells []store.CoverageCell) []gate.CoverageCounts {
	out := make([]gate.CoverageCounts, len(cells))
	for i, c := range cells {
		out[i] = gate.CoverageCounts{Dimension: c.Dimension, Value: c.Value, Recorded: c.Recorded, Shed: c.Shed, Shadowed: c.Shadowed,
			Skipped: c.Skipped, Owed: c.Owed, Missing: c.Missing, Answered: c.Answered, Judged: c.Judged, JudgeErrors: c.JudgeErrors, NotJudged: c.NotJudged}
	}
	return out
}

// Markdown renders the section for a report: per candidate version the
// verdict, the recommendation and rollback rule, the gate rows and the
// coverage.
func (l *LiveSection) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n## Live verdict\n\n")
	fmt.Fprintf(&b, "Live shadow traffic as of %s: one sequence per candidate version, from the start of its shadowing, never restarted by a window. Rule: %s.\n",
		mdTime(l.AsOf), mdText(l.Rule))
	if len(l.Verdicts) == 0 {
		b.WriteString("\nNo candidate version has been shadowed on live traffic yet.\n")
		return b.String()
	}
	for _, v := range l.Verdicts {
		fmt.Fprintf(&b, "\n### %s (version %s): %s\n\n", mdText(v.Candidate), mdCode(shortHash(v.Version)), v.Verdict)
		c := v.Counts
		fmt.Fprintf(&b, "- Sequence since %s, read through %s: %d requests (%d judged, %d failed runs, %d not sampled, %d non-response, %d without an incumbent answer)\n",
			mdTime(v.StartedAt), mdTime(v.Through), c.Observed, c.Judged, c.Failed, c.Unjudged, c.Lost, c.Unpaired)
		fmt.Fprintf(&b, "- Quality: %s, confidence sequence %s\n", signedPts(v.Quality.Estimate), gate.CSText(v.Quality.CS))
		fmt.Fprintf(&b, "- Recommendation: %s\n", mdText(v.Recommendation))
		fmt.Fprintf(&b, "- Rollback rule: %s\n", mdText(v.RollbackRule))
		fmt.Fprintf(&b, "- Advice: %s\n", mdText(v.Advice))
		b.WriteString("\n| gate | status | reason |\n|---|---|---|\n")
		for _, g := range v.Gates {
			fmt.Fprintf(&b, "| %s | %s | %s |\n", mdText(g.Gate), g.Status, mdText(g.Reason))
		}
	}
	return b.String()
}
