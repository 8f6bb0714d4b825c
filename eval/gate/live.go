package gate

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/conductor-shadow/conductor-shadow/eval/stats"
)

// LivePair is one production request that both the incumbent and a candidate
// answered (status ok): whether their final answers agree after normalisation
// (store.AgreementPair) and the segment names of its prompt (eval.SegmentNames,
// e.g. "lang:ru", "table", "lang:ru+table", "len:128-511"). Pairs are given
// in time order per candidate.
type LivePair struct {
	Candidate string
	Agree     bool
	Segments  []string
}

// LiveVerdict is a candidate's running verdict on live shadow traffic.
//
// Method: the PASS side of the anytime-valid sequential test (stats.Sequential,
// a betting confidence sequence after Waudby-Smith & Ramdas 2024, "Estimating
// means of bounded random variables by betting", JRSS-B 86(1):1–27) with the
// policy's margin, confidence and min n (SequentialConfig), fed in time order
// so it may be looked at after every request without raising its error rate.
//
// What it is computed on, and why FAIL needs grades: live traffic has no
// grader, only the comparison of final answers. A candidate can be worse than
// the incumbent only on requests where their answers differ, so each pair's
// true per-case difference is at least −1 when they disagree and at least 0
// when they agree. Testing "θ ≤ −margin" on these lower bounds can only err
// towards not passing, so a PASS ("at most margin points worse") is valid. A
// disagreement may be the candidate being right where the incumbent is wrong,
// so disagreement never shows the candidate worse: FAIL needs graded cases
// (a suite run) and is never concluded here.
type LiveVerdict struct {
	Candidate string                `json:"candidate"`
	Pairs     int                   `json:"pairs"`     // live pairs read
	Disagree  int                   `json:"disagree"`  // of them, pairs whose final answers differ
	Truncated bool                  `json:"truncated"` // only the first store.MaxAgreementPairs pairs were read
	State     stats.SequentialState `json:"state"`
	Verdict   Status                `json:"verdict"` // Pass or Inconclusive
	Text      string                `json:"text"`    // RunningVerdict of State
	// Progress (0..1) is how far the PASS evidence is towards deciding
	// (State.PassProgress).
	Progress float64 `json:"progress"`
	// Advice is how close it is to deciding: "decided", Advice's "N more cases
	// or about D days", or why agreement alone cannot PASS and how many graded
	// cases a suite needs.
	Advice string `json:"advice"`
	// Segments are the per-segment running verdicts, most pairs first (ties by
	// name); see LiveSegment for the correction.
	Segments []LiveSegment `json:"segments"`
}

// LiveSegment is a candidate's running verdict on one segment of live
// traffic, corrected for testing many segments with Holm's (1979) step-down
// procedure, the correction suite reports use per segment (stats.Holm).
//
// Each segment runs its own PASS-side sequential test (as LiveVerdict, with
// stats.SequentialConfig.Continue so its capital keeps growing past 2/α).
// Its anytime-valid p-value P = min(1, 1/sup K⁺) over the looks (State.PassP)
// is a valid p-value at any stopping time (Ramdas, Grünwald, Vovk & Shafer
// 2023, Statist. Sci. 38(4), §4; Vovk & Wang 2021, "E-values: calibration,
// combination and applications", Ann. Statist. 49(3)), and Holm needs nothing
// but valid p-values, so the segments' family-wise rate of a wrong PASS stays
// at most α/2 = (1 − confidence)/2 however often the page is looked at. The
// family is the segments with at least the policy's min n pairs (Tested); a
// segment PASSes when its Holm-adjusted p-value is ≤ α/2.
type LiveSegment struct {
	Segment   string  `json:"segment"`    // e.g. "lang:ru+table"
	Pairs     int     `json:"pairs"`      // pairs in the segment
	Disagree  int     `json:"disagree"`   // of them, pairs whose answers differ
	Tested    bool    `json:"tested"`     // at least min n pairs: in Holm's family
	P         float64 `json:"p"`          // anytime-valid p-value of "worse by the margin or more", 1 when untested
	AdjustedP float64 `json:"adjusted_p"` // Holm-adjusted across the tested segments, 1 when untested
	Verdict   Status  `json:"verdict"`    // Pass or Inconclusive
	// Progress (0..1) is log(1/AdjustedP) / log(2/α): how far the corrected
	// evidence is on its way to PASS.
	Progress float64 `json:"progress"`
	// MoreCases projects the segment's pairs still needed, from its capital's
	// growth per pair so far, to the capital that brings AdjustedP to α/2 at
	// today's ratio AdjustedP/P (Holm's multiplier); 0 once PASS, -1 with no
	// projection (no growth, or fewer than min n pairs).
	MoreCases int    `json:"more_cases"`
	Advice    string `json:"advice"`
}

// LiveCorrection names the multiple-comparison correction of LiveSegment in
// words, for pages and reports.
const LiveCorrection = "Holm's step-down correction across the segments with at least min n pairs, on anytime-valid p-values (1/largest PASS evidence)"

// LiveVerdicts runs the PASS-side sequential test per candidate over pairs
// (in time order per candidate) and per segment of each candidate, with
// Holm's correction across that candidate's tested segments. window is the
// span the pairs come from; it turns pair counts into the per-day rate of the
// advice (≤ 0: no days). truncated marks every verdict as covering only the
// pairs read. The result is sorted by candidate. A policy without a quality
// gate returns nil: there is no margin to test.
func LiveVerdicts(pairs []LivePair, window time.Duration, truncated bool, p Policy) ([]LiveVerdict, error) {
	cfg, ok := SequentialConfig(p, 1)
	if !ok {
		return nil, nil
	}
	cfg.PassOnly = true
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("gate: live verdicts: %w", err)
	}
	segCfg := cfg
	segCfg.Continue = true
	type segRun struct {
		seg      LiveSegment
		test     *stats.Sequential
		firstIdx int
	}
	type candRun struct {
		lv   LiveVerdict
		test *stats.Sequential
		segs map[string]*segRun
	}
	runs := map[string]*candRun{}
	for _, pr := range pairs {
		c := runs[pr.Candidate]
		if c == nil {
			sq, _ := stats.NewSequential(cfg) // cfg validated above
			c = &candRun{lv: LiveVerdict{Candidate: pr.Candidate, Truncated: truncated}, test: sq, segs: map[string]*segRun{}}
			runs[pr.Candidate] = c
		}
		d := 0.0
		if !pr.Agree {
			d = -1
		}
		c.lv.Pairs++
		if !pr.Agree {
			c.lv.Disagree++
		}
		c.test.Add(d)
		for _, name := range pr.Segments {
			s := c.segs[name]
			if s == nil {
				sq, _ := stats.NewSequential(segCfg)
				s = &segRun{seg: LiveSegment{Segment: name}, test: sq}
				c.segs[name] = s
			}
			s.seg.Pairs++
			if !pr.Agree {
				s.seg.Disagree++
			}
			s.test.Add(d)
		}
	}
	days := window.Hours() / 24
	perDay := func(n int) float64 {
		if days <= 0 {
			return 0
		}
		return float64(n) / days
	}
	alphaHalf := (1 - cfg.Confidence) / 2
	out := make([]LiveVerdict, 0, len(runs))
	for _, c := range runs {
		lv := c.lv
		lv.State = c.test.State()
		lv.Verdict = Status(lv.State.Verdict)
		lv.Text = RunningVerdict(lv.State)
		lv.Progress = lv.State.PassProgress
		lv.Advice = liveAdvice(p, cfg.Margin, lv.Verdict, lv.Pairs, lv.Disagree, lv.State.MoreCases, perDay(lv.Pairs))

		// Per segment: anytime p-values, Holm across the tested ones.
		var segs []*segRun
		for _, s := range c.segs {
			segs = append(segs, s)
		}
		slices.SortFunc(segs, func(a, b *segRun) int {
			if a.seg.Pairs != b.seg.Pairs {
				return b.seg.Pairs - a.seg.Pairs
			}
			return strings.Compare(a.seg.Segment, b.seg.Segment)
		})
		var tested []*segRun
		var ps []float64
		states := make([]stats.SequentialState, len(segs))
		for i, s := range segs {
			states[i] = s.test.Summary() // the segments' CS is not shown
			s.seg.P, s.seg.AdjustedP, s.seg.Verdict, s.seg.MoreCases = 1, 1, Inconclusive, -1
			if s.seg.Pairs >= cfg.MinN {
				s.seg.Tested = true
				s.seg.P = states[i].PassP
				tested = append(tested, s)
				ps = append(ps, s.seg.P)
			}
		}
		adj := stats.Holm(ps)
		for i, s := range tested {
			s.seg.AdjustedP = adj[i]
			if adj[i] <= alphaHalf {
				s.seg.Verdict = Pass
			}
		}
		for i, s := range segs {
			st := states[i]
			// Progress: the adjusted evidence 1/AdjustedP on the way to
			// 2/α, as the overall test's log K / log(2/α).
			s.seg.Progress = math.Max(0, math.Min(1, -math.Log(s.seg.AdjustedP)/-math.Log(alphaHalf)))
			logK := math.Log(st.PassEvidence)
			switch {
			case s.seg.Verdict == Pass:
				s.seg.Progress, s.seg.MoreCases = 1, 0
			case s.seg.Tested && logK > 0:
				// The capital that brings AdjustedP to α/2 at today's ratio
				// AdjustedP / P (Holm's multiplier of its rank, or more when a
				// segment before it is still undecided).
				need := math.Log(s.seg.AdjustedP / s.seg.P / alphaHalf)
				s.seg.MoreCases = max(int(math.Ceil((need-logK)/(logK/float64(s.seg.Pairs)))), 1)
			}
			s.seg.Advice = liveAdvice(p, cfg.Margin, s.seg.Verdict, s.seg.Pairs, s.seg.Disagree, s.seg.MoreCases, perDay(s.seg.Pairs))
			if !s.seg.Tested && s.seg.Verdict != Pass {
				s.seg.Advice = fmt.Sprintf("%d more pairs before it is tested (min n %d)", cfg.MinN-s.seg.Pairs, cfg.MinN)
			}
			lv.Segments = append(lv.Segments, s.seg)
		}
		out = append(out, lv)
	}
	slices.SortFunc(out, func(a, b LiveVerdict) int { return strings.Compare(a.Candidate, b.Candidate) })
	return out, nil
}

// liveAdvice says how close a live test is to deciding. When the answers
// differ on at least margin of the pairs, agreement alone cannot PASS (the
// lower bounds average below −margin): it plans a graded run at the observed
// disagreement (an upper bound of the discordance) with stats.Plan.
func liveAdvice(p Policy, margin float64, verdict Status, pairs, disagree, more int, perDay float64) string {
	share := float64(disagree) / float64(max(pairs, 1))
	switch {
	case verdict == Pass:
		return "decided"
	case pairs > 0 && share >= margin:
		d := p.Quality.Design(p.Confidence)
		disc := math.Min(0.99, math.Max(share, 0.01))
		n, err := stats.Recommend(stats.Scenario{PIncumbent: 0.5, Discordance: disc}, d, PlanPower, p.MinN)
		if err != nil {
			return "agreement alone cannot PASS; grade a suite: " + err.Error()
		}
		return fmt.Sprintf("answers differ on %.1f%% of requests, more than the %.0f-point margin: agreement alone cannot PASS; grade a suite of shadowed requests: %s",
			100*share, 100*margin, Advice(n, perDay))
	case more < 0:
		return "not enough pairs yet to project"
	}
	return Advice(more, perDay)
}
