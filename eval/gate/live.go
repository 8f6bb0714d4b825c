package gate

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/conductor-shadow/conductor-shadow/eval/stats"
)

// LiveKind is what one observation of a live sequence is.
type LiveKind int

// Kinds of live observation (LiveObs.Kind).
const (
	// LiveJudged: both sides answered and a pairwise judge gave a verdict
	// (Score) on the pair, sampled with probability InclusionProb.
	LiveJudged LiveKind = iota
	// LiveUnjudged: both sides answered; the pair was not sampled for judging
	// (or its judgment is not written yet). Cost and latency count.
	LiveUnjudged
	// LiveJudgeError: sampled, but the judge failed (a call or reply it could
	// not read): non-response, counted against judge.max_error_share.
	LiveJudgeError
	// LiveNotJudged: sampled, but never judged (store.JudgmentUnjudged: the
	// daily judge budget, a full judging queue or a stop): non-response like
	// a judge error, counted apart.
	LiveNotJudged
	// LiveFailed: the candidate run failed — error, budget_exceeded (its
	// limit stopped it) — where the incumbent answered: a certain loss,
	// judged or not.
	LiveFailed
	// LiveUnpaired: no incumbent answer to compare with (no live incumbent
	// run, or it did not end ok): counted, in no test.
	LiveUnpaired
)

// LiveObs is one production request of a live sequence, in the order of its
// candidate run's start. Money is USD, latencies ms (0: unknown), times UTC.
type LiveObs struct {
	Kind LiveKind
	// Score is the judged pair's difference: +1 win, 0 tie, −1 loss;
	// Inconsistent marks a pair whose two orders disagree (never a win: it
	// counts as a tie, Score 0).
	Score        float64
	Inconsistent bool
	// InclusionProb is the probability (0..1] the pair was sampled for
	// judging, decided before judging (store.Judgment.InclusionProb).
	InclusionProb float64
	// At is the candidate run's start; JudgedAt the judgment's time (zero
	// without one). A judgment later than At + settle counts as lost.
	At, JudgedAt time.Time
	// Cost and latency of the two runs (every kind but LiveUnpaired).
	IncumbentUSD, CandidateUSD float64
	IncumbentMs, CandidateMs   float64
	// Segments are the request's segment names (eval.SegmentNames and
	// "app:<app>"), matched against the policy's must-not-regress list.
	Segments []string
}

// LiveCounts count a live sequence's observations by what became of them.
type LiveCounts struct {
	Observed int `json:"observed"` // every observation
	Paired   int `json:"paired"`   // with an incumbent answer: cost and latency pairs
	// Evidence is the quality test's observations: Judged + Failed.
	Evidence int `json:"evidence"`
	Judged   int `json:"judged"` // judged pairs in the quality test
	Wins     int `json:"wins"`
	Ties     int `json:"ties"` // consistent ties
	Losses   int `json:"losses"`
	// Inconsistent judged pairs (the orders disagree) count as ties in the
	// test.
	Inconsistent int `json:"inconsistent"`
	Failed       int `json:"failed"`   // candidate runs that failed: losses
	Unjudged     int `json:"unjudged"` // answered pairs not sampled for judging
	// Lost is the sampled pairs left out as non-response: JudgeErrors,
	// NotJudged (sampled, never judged), Late (judged after the settle time)
	// and BelowFloor (sampled with π < live.min_inclusion_prob).
	Lost        int `json:"lost"`
	JudgeErrors int `json:"judge_errors"`
	NotJudged   int `json:"not_judged"`
	Late        int `json:"late"`
	BelowFloor  int `json:"below_floor"`
	Unpaired    int `json:"unpaired"` // no incumbent answer
}

// LiveQuality is where the live quality test stands.
type LiveQuality struct {
	// Estimate is the weighted mean difference candidate − incumbent (0..1;
	// ×100 for points): Σ dᵢ/πᵢ / Σ 1/πᵢ over the judged pairs and failed runs
	// (Hájek's ratio form of Horvitz–Thompson; failures have π = 1).
	Estimate float64 `json:"estimate"`
	// CS is the anytime-valid confidence sequence for the difference at the
	// policy's confidence, read at the points of csGrid (1-point steps from
	// −10 to +5 points, 5-point steps to ±30; −1 or +1 beyond), a running
	// intersection whose ends only move inwards; LowNow is its lower end read
	// from the evidence now (what the rollback rule reads).
	CS     stats.Interval `json:"cs"`
	LowNow float64        `json:"low_now"`
	// PassP and FailP are the anytime-valid p-values of "worse by the margin
	// or more" and "no worse than the FAIL threshold" (stats.BettingCS).
	PassP float64 `json:"pass_p"`
	FailP float64 `json:"fail_p"`
	// PassProgress and FailProgress (0..1) are log K / log(2/α) of each test.
	PassProgress float64 `json:"pass_progress"`
	FailProgress float64 `json:"fail_progress"`
	// MoreEvidence projects the quality observations still needed by the
	// test closer to deciding, from its evidence's growth so far; 0 once
	// decided, -1 without a projection.
	MoreEvidence int `json:"more_evidence"`
}

// Recommendations of a live verdict (LiveVerdict.Action).
const (
	ActionCutOver       = "cut_over"
	ActionKeepShadowing = "keep_shadowing"
	ActionDoNotCutOver  = "do_not_cut_over"
	ActionRollBack      = "roll_back"
)

// Gate names of the live verdict's own rows (Result.Gate).
const (
	GateCoverage = "coverage"
	GateRollback = "rollback"
)

// LiveVerdict is the live verdict of one candidate version at one look.
type LiveVerdict struct {
	PolicyVersion string `json:"policy_version"`
	Verdict       Status `json:"verdict"` // PASS, FAIL or INCONCLUSIVE (LiveRule)
	// Gates are the rows the verdict rests on, in this order: the judge's
	// trust rows (CheckJudge), the coverage rows, then quality, each listed
	// segment, cost, latency, and the rollback rule's row once it fired.
	Gates []Result `json:"gates"`
	// Withheld names why the verdict is INCONCLUSIVE whatever the tests say:
	// an untrusted judge, loss that differs by segment.
	Withheld []string    `json:"withheld,omitempty"`
	Quality  LiveQuality `json:"quality"`
	Counts   LiveCounts  `json:"counts"`
	// Action and Recommendation are the cut-over recommendation
	// (ActionCutOver, …) and its sentence; RollbackRule states the rollback
	// rule in words, Rollback whether it fired.
	Action         string `json:"action"`
	Recommendation string `json:"recommendation"`
	RollbackRule   string `json:"rollback_rule"`
	Rollback       bool   `json:"rollback"`
	// Advice is how close the verdict is to deciding: "decided", or the
	// quality evidence still needed in observations and days.
	Advice string `json:"advice"`
}

// LiveRule states how a live verdict is reached, for pages and reports.
const LiveRule = "INCONCLUSIVE when the judge is not trusted or coverage differs by segment, whatever the tests say; " +
	"else FAIL when any test FAILs (quality, a listed segment, cost, p95); else PASS when every test PASSes; else INCONCLUSIVE"

// LiveEvidence is what a look adds to the sequence's own tests: the trust
// rows of the judges its judged pairs rest on (CheckJudge, one call per
// judge) and the coverage rows (CheckCoverage), each with the reasons that
// withhold the verdict; PerDay the observations per day so far (0:
// unknown), for the advice.
type LiveEvidence struct {
	JudgeRows, CoverageRows         []Result
	JudgeWithheld, CoverageWithheld []string
	PerDay                          float64
}

// qualityTests is the weighted quality test of a live sequence (or of one
// segment of it): at each test point t, the pair of one-sided betting tests
// of "mean difference ≤ t" and "≥ t" (stats.BettingCS with Grid 2, as
// stats.CostRatioSequence) on xᵢ = (dᵢ − t)/πᵢ.
//
// Why this is valid with any sampling design: the quality observations are
// the judged pairs and the failed runs (π = 1), a sample in which a pair
// appears with probability π, decided before judging. Over that sample
// E[(d − t)/π] = E_all[d − t] / E_all[π], so its sign is the sign of θ − t
// (θ the mean difference over all answered pairs and failures): the betting
// test of "E x ≤ 0" on the sample is a test of "θ ≤ t" (Horvitz–Thompson
// weighting inside the test; Waudby-Smith & Ramdas 2024 for the betting
// test). The bets use earlier observations only, never πᵢ itself, so a
// design whose π depends on the request (a segment judged more often) keeps
// the error rates; x is bounded because π ≥ live.min_inclusion_prob.
//
// With one constant π (a Bernoulli sample) x is the unweighted difference
// times 1/π and the test's bounds, prior and bets scale with it, so it takes
// exactly the decisions of the unweighted test on the judged pairs: such a
// sample needs no weights (TestLiveConstantInclusionNeedsNoWeights).
type qualityTests struct {
	floor  float64
	conf   float64
	points []float64 // ascending
	tests  map[float64]*stats.BettingCS
	n      int
	sw     float64 // Σ 1/π
	swd    float64 // Σ d/π
}

// csGrid is where the confidence sequence is read (differences, 0..1): every
// point from −10 to +5 points, where margins, FAIL thresholds and rollback
// margins sit, and every 5 points out to ±30 beyond. Each point costs one
// pair of tests per observation, so the grid is no finer than a page needs.
var csGrid = func() []float64 {
	var g []float64
	for _, p := range []int{-30, -25, -20, -15} {
		g = append(g, float64(p)/100)
	}
	for p := -10; p <= 5; p++ {
		g = append(g, float64(p)/100)
	}
	for _, p := range []int{10, 15, 20, 25, 30} {
		g = append(g, float64(p)/100)
	}
	return g
}()

func newQualityTests(floor, conf float64, points ...float64) (*qualityTests, error) {
	q := &qualityTests{floor: floor, conf: conf, tests: map[float64]*stats.BettingCS{}}
	points = append(points, csGrid...)
	zero := 0.0
	for _, t := range points {
		t = roundPoint(t)
		if _, ok := q.tests[t]; ok {
			continue
		}
		cs, err := stats.NewBettingCS(stats.BettingCSConfig{Lo: (-1 - t) / floor, Hi: (1 - t) / floor, Confidence: conf,
			Points: []float64{0}, Grid: 2, PriorMean: &zero})
		if err != nil {
			return nil, fmt.Errorf("gate: live quality test at %g: %w", t, err)
		}
		q.tests[t] = cs
		q.points = append(q.points, t)
	}
	slices.Sort(q.points)
	return q, nil
}

// CSText renders a live confidence sequence as "[-4.0 pts, +1.0 pts]", an
// end beyond csGrid as "below -30.0 pts" or "above +30.0 pts".
func CSText(iv stats.Interval) string {
	lo, hi := pts(iv.Low), pts(iv.High)
	if iv.Low < csGrid[0] {
		lo = "below " + pts(csGrid[0])
	}
	if iv.High > csGrid[len(csGrid)-1] {
		hi = "above " + pts(csGrid[len(csGrid)-1])
	}
	return "[" + lo + ", " + hi + "]"
}

// roundPoint keys a test point so that −0.03 from a margin and −0.03 of the
// grid are one test.
func roundPoint(t float64) float64 { return math.Round(t*1e9) / 1e9 }

func (q *qualityTests) observe(d, pi float64) {
	q.n++
	q.sw += 1 / pi
	q.swd += d / pi
	for t, cs := range q.tests {
		cs.Observe((d - t) / pi)
	}
}

func (q *qualityTests) test(t float64) *stats.BettingCS { return q.tests[roundPoint(t)] }

// above: "θ ≤ t" rejected (the difference is shown above t); below: "θ ≥ t".
func (q *qualityTests) above(t float64) bool     { return q.test(t).Above(0) }
func (q *qualityTests) below(t float64) bool     { return q.test(t).Below(0) }
func (q *qualityTests) pAbove(t float64) float64 { return q.test(t).PAbove(0) }
func (q *qualityTests) pBelow(t float64) float64 { return q.test(t).PBelow(0) }

func (q *qualityTests) estimate() float64 {
	if q.sw == 0 {
		return 0
	}
	return q.swd / q.sw
}

// cs reads the confidence sequence off csGrid: the largest grid point below
// which every grid test showed the difference above, and the smallest above
// which every one showed it below (−1 and +1 beyond the grid); lowNow is the
// low end from the capitals now.
func (q *qualityTests) cs() (iv stats.Interval, lowNow float64) {
	a := (1 - q.conf) / 2
	iv, lowNow = stats.Interval{Low: -1, High: 1}, -1
	for _, t := range csGrid {
		if !q.test(t).Above(0) {
			break
		}
		iv.Low = t
	}
	for _, t := range csGrid {
		if q.test(t).PAboveNow(0) > a {
			break
		}
		lowNow = t
	}
	for i := len(csGrid) - 1; i >= 0; i-- {
		if !q.test(csGrid[i]).Below(0) {
			break
		}
		iv.High = csGrid[i]
	}
	if iv.Low > iv.High {
		iv.Low, iv.High = q.estimate(), q.estimate()
	}
	return iv, lowNow
}

// LiveSequence is the live verdict of one candidate version: one sequence of
// anytime-valid tests started when its shadowing started (store.
// SequenceStart), fed every request from then on in the order of its
// candidate run's start, and read (Verdict) whenever a page, a report or
// the notifier looks — never restarted by a window. Pages and reports replay
// it from the stored rows (eval.LiveVerdicts); `validity --live` drives the
// same Observe and Verdict over simulated days.
//
// The tests, each at the policy's confidence (each side at α/2):
//   - quality (qualityTests): the judged pairs' win/tie/loss and every failed
//     candidate run as a loss, weighted by 1/π; PASS when "worse by the
//     margin or more" is rejected, FAIL when "no worse than the FAIL
//     threshold" is; no decision before the policy's min_n observations;
//   - each must-not-regress segment of the policy (SegmentResults on the
//     segment's own tests' anytime p-values, with the segment margin);
//   - cost per request (stats.CostRatioSequence on the paired run costs, the
//     policy's cost ceiling);
//   - p95 latency (stats.QuantileRatioSequence: confidence sequences on each
//     side's 95th percentile, Howard & Ramdas 2022, the policy's p95
//     ceiling).
//
// Not safe for concurrent use.
type LiveSequence struct {
	p       Policy
	rules   LiveRules
	quality *qualityTests
	segs    map[string]*qualityTests
	cost    *stats.CostRatioSequence
	costMax float64 // the largest run cost of the pairs seen (adaptive bound)
	costN   int     // cost pairs seen
	p95     *stats.QuantileRatioSequence
	counts  LiveCounts
	// The judged sample's coverage of the answered pairs: Σ 1/π and
	// Σ (1 − π)/π² over the sampled pairs (judged or lost), and whether
	// every one had the same π (firstPi).
	htSum, htVar float64
	firstPi      float64
	constPi      bool
}

// NewLiveSequence starts a live sequence under p; it returns p's Validate
// error, or an error when p has no quality gate (nothing to test live).
func NewLiveSequence(p Policy) (*LiveSequence, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if p.Quality == nil {
		return nil, fmt.Errorf("gate: live sequence: policy %s has no quality gate", p.Version)
	}
	s := &LiveSequence{p: p, rules: p.LiveRules(), segs: map[string]*qualityTests{}}
	m, f, d := p.Quality.MarginPoints/100, p.Quality.Fail()/100, s.rules.RollbackMarginPoints/100
	var err error
	if s.quality, err = newQualityTests(s.rules.MinInclusionProb, p.Confidence, -m, -f, -d); err != nil {
		return nil, err
	}
	if g := p.Segments; g != nil {
		sm, sf := p.SegmentMargin()/100, p.SegmentFail()/100
		for _, name := range g.MustNotRegress {
			if s.segs[name], err = newQualityTests(s.rules.MinInclusionProb, p.Confidence, -sm, -sf); err != nil {
				return nil, err
			}
		}
	}
	if c := p.Cost; c != nil {
		// Costs are fed divided by the bound, so the sequence's own bound is 1.
		if s.cost, err = stats.NewCostRatioSequence(c.MaxRatio, 1, p.Confidence); err != nil {
			return nil, fmt.Errorf("gate: live sequence: %w", err)
		}
	}
	if l := p.Latency; l != nil {
		if s.p95, err = stats.NewQuantileRatioSequence(0.95, l.MaxP95Ratio, p.Confidence); err != nil {
			return nil, fmt.Errorf("gate: live sequence: %w", err)
		}
	}
	return s, nil
}

// Observe takes the sequence's next request.
func (s *LiveSequence) Observe(o LiveObs) {
	c := &s.counts
	c.Observed++
	if o.Kind == LiveUnpaired {
		c.Unpaired++
		return
	}
	c.Paired++
	s.observeCost(o.IncumbentUSD, o.CandidateUSD)
	if s.p95 != nil {
		s.p95.Observe(o.IncumbentMs, o.CandidateMs)
	}
	kind := o.Kind
	if (kind == LiveJudged || kind == LiveJudgeError || kind == LiveNotJudged) && o.InclusionProb > 0 {
		pi := math.Min(1, o.InclusionProb)
		s.htSum += 1 / pi
		s.htVar += (1 - pi) / (pi * pi)
		switch {
		case s.firstPi == 0:
			s.firstPi, s.constPi = pi, true
		case math.Abs(pi-s.firstPi) > 1e-9:
			s.constPi = false
		}
	}
	if kind == LiveJudged && !o.JudgedAt.IsZero() && o.JudgedAt.After(o.At.Add(s.rules.Settle)) {
		c.Late++
		c.Lost++
		return
	}
	if kind == LiveJudged && !(o.InclusionProb >= s.rules.MinInclusionProb && o.InclusionProb <= 1) {
		c.BelowFloor++
		c.Lost++
		return
	}
	var d, pi float64
	switch kind {
	case LiveUnjudged:
		c.Unjudged++
		return
	case LiveJudgeError:
		c.JudgeErrors++
		c.Lost++
		return
	case LiveNotJudged:
		c.NotJudged++
		c.Lost++
		return
	case LiveFailed:
		c.Failed++
		d, pi = -1, 1
	case LiveJudged:
		c.Judged++
		d, pi = math.Max(-1, math.Min(1, o.Score)), o.InclusionProb
		switch {
		case o.Inconsistent:
			d = 0
			c.Inconsistent++
		case d > 0:
			c.Wins++
		case d < 0:
			c.Losses++
		default:
			c.Ties++
		}
	default:
		return
	}
	c.Evidence++
	s.quality.observe(d, pi)
	for _, name := range o.Segments {
		if t := s.segs[name]; t != nil {
			t.observe(d, pi)
		}
	}
}

// observeCost feeds the cost test one pair, divided by the bound: the
// policy's max_run_cost_usd, else DefaultCostScale × the largest cost of the
// pairs before (predictable, so the test's sign stays that of the cost
// ratio's gap to its ceiling), after DefaultCostBurnIn pairs.
func (s *LiveSequence) observeCost(inc, cand float64) {
	if s.cost == nil {
		return
	}
	bound := s.rules.MaxRunCostUSD
	if bound <= 0 {
		if s.costN < DefaultCostBurnIn || s.costMax <= 0 {
			s.costN++
			s.costMax = math.Max(s.costMax, math.Max(inc, cand))
			return
		}
		bound = DefaultCostScale * s.costMax
	}
	s.costN++
	s.costMax = math.Max(s.costMax, math.Max(inc, cand))
	s.cost.Observe(inc/bound, cand/bound)
}

// Counts returns the observations' counts so far.
func (s *LiveSequence) Counts() LiveCounts { return s.counts }

// ConstantInclusion reports whether every sampled pair so far had one
// inclusion probability (a Bernoulli sample), false before any.
func (s *LiveSequence) ConstantInclusion() bool { return s.constPi }

// answered is the pairs both sides answered: judged, not sampled, lost.
func (s *LiveSequence) answered() int { return s.counts.Judged + s.counts.Unjudged + s.counts.Lost }

// sampleCheck says why the judged sample cannot stand for the answered
// pairs, "" when it can: no answered pair was sampled at all (live judging
// off: the failed runs alone would be weighed against nothing), or the
// Horvitz–Thompson count of the answered pairs, Σ 1/π over the sampled ones,
// differs from their real count by more than the coverage check's level
// allows (normal approximation, variance Σ (1 − π)/π²): judging stopped for
// part of the time (a judge budget spent) or the stored probabilities are
// not the ones used.
func (s *LiveSequence) sampleCheck() string {
	a := s.answered()
	if a == 0 {
		return ""
	}
	if s.htSum == 0 {
		return fmt.Sprintf("none of the %d answered pairs was sampled for judging (live judging off or not started): the failed runs cannot be weighed against them", a)
	}
	z := (s.htSum - float64(a)) / math.Sqrt(math.Max(s.htVar, 1))
	crit := stats.ZFor(1 - s.rules.CoverageP)
	if math.Abs(z) <= crit {
		return ""
	}
	return fmt.Sprintf("the judged sample does not cover the answered pairs: Σ 1/π over the %d sampled pairs is %.0f against %d answered (z %.1f, beyond ±%.1f): judging stopped for part of the time (a judge budget spent?) or the stored inclusion probabilities are not the ones used",
		s.counts.Judged+s.counts.Lost, s.htSum, a, z, crit)
}

// Verdict reads the sequence now with ev and applies LiveRule; it does not
// change the sequence, so any number of looks may be taken.
func (s *LiveSequence) Verdict(ev LiveEvidence) LiveVerdict {
	p := s.p
	alpha := 1 - p.Confidence
	m, f, d := p.Quality.MarginPoints/100, p.Quality.Fail()/100, s.rules.RollbackMarginPoints/100
	v := LiveVerdict{PolicyVersion: p.Version, Counts: s.counts}
	q := s.quality
	iv, lowNow := q.cs()
	v.Quality = LiveQuality{Estimate: q.estimate(), CS: iv, LowNow: lowNow, PassP: q.pAbove(-m), FailP: q.pBelow(-f)}
	thr := math.Log(2 / alpha)
	prog := func(pv float64) float64 { return math.Max(0, math.Min(1, -math.Log(pv)/thr)) }
	v.Quality.PassProgress, v.Quality.FailProgress = prog(v.Quality.PassP), prog(v.Quality.FailP)

	// Quality.
	minN := max(p.MinN, 1)
	qr := Result{Gate: "quality", Figure: v.Quality.Estimate, Interval: &iv, Threshold: -m}
	n := s.counts.Evidence
	evidence := fmt.Sprintf("%d judged pairs (%d wins, %d ties, %d losses, %d inconsistent) and %d failed runs, weighted by 1/inclusion probability: diff %s, confidence sequence %s",
		s.counts.Judged, s.counts.Wins, s.counts.Ties, s.counts.Losses, s.counts.Inconsistent, s.counts.Failed, pts(v.Quality.Estimate), CSText(iv))
	sample := s.sampleCheck()
	switch {
	case sample != "":
		qr.Status = Inconclusive
		qr.Reason = sample + "; " + evidence
	case n < minN:
		qr.Status = Inconclusive
		qr.Reason = fmt.Sprintf("only %d quality observations, policy needs %d before a decision; %s", n, minN, evidence)
	case q.above(-m):
		qr.Status = Pass
		qr.Reason = fmt.Sprintf("non-inferior: \"worse by %s or more\" rejected (anytime p %.3g ≤ %.3g); %s", MarginText(stats.MethodTango, 100*m), v.Quality.PassP, alpha/2, evidence)
	case q.below(-f):
		qr.Status, qr.Threshold = Fail, -f
		qr.Reason = fmt.Sprintf("worse: \"no worse than %s\" rejected (anytime p %.3g ≤ %.3g); %s", pts(-f), v.Quality.FailP, alpha/2, evidence)
	default:
		qr.Status = Inconclusive
		qr.Reason = fmt.Sprintf("neither non-inferiority within %s (p %.3g) nor a drop below %s (p %.3g) shown yet; %s",
			MarginText(stats.MethodTango, 100*m), v.Quality.PassP, pts(-f), v.Quality.FailP, evidence)
	}
	v.Quality.MoreEvidence = s.moreEvidence(qr.Status, v.Quality, thr)
	tests := []Result{qr}

	// Listed segments, the family fixed by the policy.
	if g := p.Segments; g != nil {
		sm, sf := p.SegmentMargin()/100, p.SegmentFail()/100
		st := map[string]SegmentTest{}
		for name, t := range s.segs {
			siv, _ := t.cs()
			st[name] = SegmentTest{Name: name, Present: t.n > 0, N: t.n, Diff: t.estimate(), Interval: &siv,
				PassP: t.pAbove(-sm), FailP: t.pBelow(-sf), Method: stats.MethodTango}
		}
		tests = append(tests, SegmentResults(*g, 100*sm, 100*sf, FixedLevels(p.Confidence), st)...)
	}
	if s.cost != nil {
		r := Result{Gate: "cost", Threshold: p.Cost.MaxRatio, Status: Status(s.cost.Decide())}
		what := fmt.Sprintf("cost per request on %d pairs (anytime-valid test of the ratio against %.2f×)", s.cost.N(), p.Cost.MaxRatio)
		switch {
		case s.cost.OutOfBounds > 0:
			r.Reason = fmt.Sprintf("%s: %d runs cost more than the test's bound (live.max_run_cost_usd or %g× the largest cost before): the test cannot decide", what, s.cost.OutOfBounds, DefaultCostScale)
		case r.Status == Pass:
			r.Reason = what + ": within the ceiling"
		case r.Status == Fail:
			r.Reason = what + ": above the ceiling"
		default:
			r.Reason = what + ": undecided"
		}
		tests = append(tests, r)
	}
	if s.p95 != nil {
		r := Result{Gate: "latency", Threshold: p.Latency.MaxP95Ratio, Status: Status(s.p95.Decide())}
		ib, cb := s.p95.Incumbent.Bounds(), s.p95.Cand.Bounds()
		r.Reason = fmt.Sprintf("p95 latency: candidate in [%s, %s] ms, incumbent in [%s, %s] ms on %d and %d runs (confidence sequences on each p95, Howard & Ramdas 2022); PASS when the candidate's upper end ≤ %.2f× the incumbent's lower end, FAIL when its lower end > %.2f× the incumbent's upper end",
			msText(cb.Low), msText(cb.High), msText(ib.Low), msText(ib.High), s.p95.Cand.N(), s.p95.Incumbent.N(), p.Latency.MaxP95Ratio, p.Latency.MaxP95Ratio)
		tests = append(tests, r)
	}

	// The rule.
	v.Gates = append(append(append(v.Gates, ev.JudgeRows...), ev.CoverageRows...), tests...)
	v.Withheld = append(append(v.Withheld, ev.JudgeWithheld...), ev.CoverageWithheld...)
	anyFail, allPass := false, true
	for _, r := range tests {
		anyFail = anyFail || r.Status == Fail
		allPass = allPass && r.Status == Pass
	}
	switch {
	case len(v.Withheld) > 0:
		v.Verdict = Inconclusive
	case anyFail:
		v.Verdict = Fail
	case allPass:
		v.Verdict = Pass
	default:
		v.Verdict = Inconclusive
	}

	// Rollback rule and recommendation.
	v.RollbackRule = fmt.Sprintf("after cutting over, keep this sequence running (the incumbent still shadowed) and roll back if the lower bound of the quality difference falls below %s (read from the evidence now) or the verdict turns FAIL", pts(-d))
	// The quality test's PASS is never taken back (its evidence is the
	// running maximum), so "has passed" is read off it at any look.
	if qr.Status == Pass && lowNow < -d {
		v.Rollback = true
		why := fmt.Sprintf("the quality difference's lower bound from the evidence now is %s, below %s", pts(lowNow), pts(-d))
		v.Gates = append(v.Gates, Result{Gate: GateRollback, Status: Inconclusive, Figure: lowNow, Threshold: -d,
			Reason: "rollback rule fired: " + why})
		if v.Verdict == Pass {
			v.Verdict = Inconclusive
		}
	}
	switch {
	case v.Rollback:
		v.Action, v.Recommendation = ActionRollBack, "Roll back to the incumbent (if cut over) and do not cut over: the rollback rule fired."
	case v.Verdict == Pass:
		v.Action, v.Recommendation = ActionCutOver, "Cut over: the candidate version is non-inferior on quality and within the cost and p95 ceilings on live traffic; "+v.RollbackRule+"."
	case v.Verdict == Fail:
		v.Action, v.Recommendation = ActionDoNotCutOver, "Do not cut over (roll back if already cut over): "+failedNames(tests)+" FAILed on live traffic."
	default:
		v.Action, v.Recommendation = ActionKeepShadowing, "Keep shadowing: "+undecidedText(v, tests)
	}
	v.Advice = s.advice(v, ev.PerDay)
	return v
}

// moreEvidence projects the quality observations still needed by the test
// closer to deciding, from its log-capital's growth per observation so far.
func (s *LiveSequence) moreEvidence(st Status, q LiveQuality, thr float64) int {
	if st == Pass || st == Fail {
		return 0
	}
	n := s.counts.Evidence
	lead := math.Max(-math.Log(q.PassP), -math.Log(q.FailP))
	if n == 0 || lead <= 0 {
		return -1
	}
	more := int(math.Ceil((thr - lead) / (lead / float64(n))))
	return max(more, max(s.p.MinN, 1)-n, 0)
}

func (s *LiveSequence) advice(v LiveVerdict, perDay float64) string {
	switch {
	case v.Verdict != Inconclusive && !v.Rollback:
		return "decided"
	case len(v.Withheld) > 0:
		return "no verdict until the checks above pass; more traffic does not mend them"
	case v.Quality.MoreEvidence < 0:
		return "not enough evidence yet to project"
	case v.Quality.MoreEvidence == 0:
		return "quality decided; waiting for the other tests"
	}
	// Quality observations per day ≈ the share of observations that are evidence.
	share := float64(s.counts.Evidence) / float64(max(s.counts.Observed, 1))
	return "quality: " + Advice(v.Quality.MoreEvidence, perDay*share) + " (judged pairs and failed runs)"
}

func failedNames(rs []Result) string {
	var names []string
	for _, r := range rs {
		if r.Status == Fail {
			names = append(names, r.Gate)
		}
	}
	return strings.Join(names, ", ")
}

func undecidedText(v LiveVerdict, rs []Result) string {
	if len(v.Withheld) > 0 {
		return "no verdict: " + strings.Join(v.Withheld, "; ")
	}
	var names []string
	for _, r := range rs {
		if r.Status != Pass {
			names = append(names, r.Gate)
		}
	}
	return "undecided: " + strings.Join(names, ", ") + "."
}

func msText(ms float64) string {
	if math.IsInf(ms, 1) {
		return "∞"
	}
	return fmt.Sprintf("%.0f", ms)
}
