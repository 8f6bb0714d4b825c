package stats

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/stat"

	"github.com/conductor-shadow/conductor-shadow/store/figure"
	"github.com/conductor-shadow/conductor-shadow/store/percentile"
)

// Obs is one pipeline's graded run on one case, the unit Compare pairs.
// Graded is false when the grader could not judge (the case then leaves the
// quality figures but still counts for cost, latency, tokens and calls).
// Segments names the groups the case belongs to, e.g. "category:math",
// "app:support", "tag:latex"; both sides of a pair are read from the
// incumbent's observation.
//
// Score is the grader's 0..1 value. When some graded case of a comparison has
// a score strictly between 0 and 1 (an LLM judge's), the quality difference is
// the mean score difference (MethodMeanScore); otherwise it is the pass/fail
// difference (MethodTango).
type Obs struct {
	Graded    bool
	Passed    bool
	Score     float64 // 0..1
	CostUSD   float64 // USD
	LatencyMs float64 // ms; 0 = unknown, left out of the percentiles
	TokensIn  int64
	TokensOut int64
	Calls     int
	Segments  []string
}

// Options tune Compare. Zero values take the defaults.
type Options struct {
	// Resamples is the number of bootstrap resamples (default 2000).
	Resamples int
	// Seed seeds the bootstrap (PCG); the same seed gives the same intervals.
	Seed uint64
	// Confidence is the two-sided level of every interval (default 0.95).
	Confidence float64
	// DecisionConfidence, when in (0, 1), is the level of the intervals gates
	// decide on instead — the paired quality intervals (overall and per
	// segment) and the cost and p95 ratio intervals — while the per-arm
	// figures keep Confidence: a look of a group-sequential plan decides at
	// its boundary's level (LookConfidence).
	DecisionConfidence float64
	// Effect is the accuracy difference (0..1) the minimum sample size is
	// computed for (default 0.05, five points).
	Effect float64
	// Power is the power the minimum sample size is computed for (default 0.8).
	Power float64
	// NoArmIntervals leaves out the bootstrap of the per-arm latency
	// percentile intervals (each is then its point value): no gate uses them,
	// and simulations of thousands of suites need only the gates' figures.
	NoArmIntervals bool
}

func (o *Options) defaults() {
	if o.Resamples <= 0 {
		o.Resamples = 2000
	}
	if o.Confidence <= 0 || o.Confidence >= 1 {
		o.Confidence = 0.95
	}
	if o.DecisionConfidence <= 0 || o.DecisionConfidence >= 1 {
		o.DecisionConfidence = o.Confidence
	}
	if o.Effect <= 0 || o.Effect > 1 {
		o.Effect = 0.05
	}
	if o.Power <= 0 || o.Power >= 1 {
		o.Power = 0.8
	}
}

// Arm is one pipeline's figures over the compared cases.
type Arm struct {
	N                 int      `json:"n"`      // cases
	Graded            int      `json:"graded"` // cases the grader judged
	Passed            int      `json:"passed"`
	Accuracy          float64  `json:"accuracy"`    // Passed/Graded, 0..1
	AccuracyCI        Interval `json:"accuracy_ci"` // Wilson score interval
	CostPerRequestUSD float64  `json:"cost_per_request_usd"`
	TotalCostUSD      float64  `json:"total_cost_usd"`
	P50LatencyMs      float64  `json:"p50_latency_ms"` // nearest rank
	P95LatencyMs      float64  `json:"p95_latency_ms"`
	P99LatencyMs      float64  `json:"p99_latency_ms"`
	P50LatencyCI      Interval `json:"p50_latency_ci"` // bootstrap percentile interval, ms
	P95LatencyCI      Interval `json:"p95_latency_ci"`
	P99LatencyCI      Interval `json:"p99_latency_ci"`
	MeanTokensIn      float64  `json:"mean_tokens_in"`
	MeanTokensOut     float64  `json:"mean_tokens_out"`
	MeanCalls         float64  `json:"mean_calls"`
}

// Paired is the candidate − incumbent accuracy difference over the cases both
// sides' graders judged. Method names the test behind Diff and DiffCI:
// MethodTango (pass/fail grades: Diff = (c − b)/N with Tango's score
// interval) or MethodMeanScore / MethodMeanScoreStratified (continuous
// scores: Diff is the mean score difference with the restricted-variance
// score interval of MeanScoreZ, stratified by category). The pass/fail
// counts are filled either way.
//
// ZAt is the test's score statistic Z(θ) for "the difference is θ"
// (decreasing in θ; TangoZ or MeanScoreZ): the gates read one-sided p-values
// from it, Φ(Z(θ)) for "θ or more" and 1 − Φ(Z(θ)) for "θ or less". It is nil
// in a comparison decoded from JSON.
type Paired struct {
	Method         string   `json:"method"`
	N              int      `json:"n"`               // pairs graded on both sides
	Both           int      `json:"both"`            // both passed
	IncumbentOnly  int      `json:"incumbent_only"`  // McNemar b: incumbent passed, candidate failed
	CandidateOnly  int      `json:"candidate_only"`  // McNemar c: candidate passed, incumbent failed
	Neither        int      `json:"neither"`         // both failed
	Diff           float64  `json:"diff"`            // (c − b)/N, or the mean score difference; 0..1 points
	DiffCI         Interval `json:"diff_ci"`         // Method's interval at the comparison's confidence
	DiffSD         float64  `json:"diff_sd"`         // standard deviation of the per-case differences
	McNemarP       float64  `json:"mcnemar_p"`       // exact two-sided
	DiscordantRate float64  `json:"discordant_rate"` // (b + c)/N

	ZAt func(theta float64) float64 `json:"-"`
}

// PassP is the one-sided p-value of "θ ≤ theta" (the test's upper tail,
// 1 − Φ(Z(theta))): small when the candidate is shown better than theta. It
// is 1 without pairs or without ZAt.
func (q Paired) PassP(theta float64) float64 {
	if q.N == 0 || q.ZAt == nil {
		return 1
	}
	return 1 - normalCDF(q.ZAt(theta))
}

// FailP is the one-sided p-value of "θ ≥ theta" (Φ(Z(theta))): small when the
// candidate is shown worse than theta. 1 without pairs or without ZAt.
func (q Paired) FailP(theta float64) float64 {
	if q.N == 0 || q.ZAt == nil {
		return 1
	}
	return normalCDF(q.ZAt(theta))
}

func normalCDF(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }

// Segment is the paired comparison on one segment. AdjustedP is the McNemar
// p-value after Holm's correction over all segments of the comparison.
type Segment struct {
	Name      string  `json:"name"`
	Incumbent Arm     `json:"incumbent"`
	Candidate Arm     `json:"candidate"`
	Quality   Paired  `json:"quality"`
	AdjustedP float64 `json:"adjusted_p"`
}

// SampleSize is the minimum number of paired cases to detect Effect with
// McNemar's test at Alpha and Power, given the observed discordant fraction
// (McNemarSampleSize).
type SampleSize struct {
	Effect     float64 `json:"effect"`
	Alpha      float64 `json:"alpha"`
	Power      float64 `json:"power"`
	Discordant float64 `json:"discordant"`
	N          int     `json:"n"`
}

// Comparison is a candidate against the incumbent on the same cases.
//
// CostRatio is candidate mean cost per request / incumbent's (CostRatioTest,
// delta method on the log scale); P95Ratio is the candidate's p95 latency /
// incumbent's (QuantileRatioTest, Bahadur's representation with paired
// influences); CostRatioCI and P95RatioCI are their Wald intervals at the
// comparison's confidence, CostTest and P95Test the figures a plan scales. A
// ratio whose denominator is 0 is MaxRatio when the numerator is positive and
// 1 when both are 0 (JSON has no infinity). The per-arm latency percentile
// intervals are paired bootstrap percentile intervals.
type Comparison struct {
	Confidence float64 `json:"confidence"`
	// DecisionConfidence is the level of Quality.DiffCI, the segments'
	// DiffCI, CostRatioCI and P95RatioCI (Options.DecisionConfidence).
	DecisionConfidence float64    `json:"decision_confidence"`
	Resamples          int        `json:"resamples"`
	Seed               uint64     `json:"seed"`
	Incumbent          Arm        `json:"incumbent"`
	Candidate          Arm        `json:"candidate"`
	Quality            Paired     `json:"quality"`
	CostRatio          float64    `json:"cost_ratio"`
	CostRatioCI        Interval   `json:"cost_ratio_ci"`
	P95Ratio           float64    `json:"p95_ratio"`
	P95RatioCI         Interval   `json:"p95_ratio_ci"`
	CostTest           RatioTest  `json:"cost_test"`
	P95Test            RatioTest  `json:"p95_test"`
	Segments           []Segment  `json:"segments"`   // sorted by name
	Correction         string     `json:"correction"` // how segment p-values are adjusted
	SampleSize         SampleSize `json:"sample_size"`
}

// Compare pairs inc[i] with cand[i] (the same case) and computes every figure
// of a Comparison. It returns an error when the slices differ in length or are
// empty.
func Compare(inc, cand []Obs, opts Options) (Comparison, error) {
	if len(inc) != len(cand) {
		return Comparison{}, fmt.Errorf("stats: compare: %d incumbent and %d candidate observations", len(inc), len(cand))
	}
	if len(inc) == 0 {
		return Comparison{}, fmt.Errorf("stats: compare: no observations")
	}
	opts.defaults()
	rng := rand.New(rand.NewPCG(opts.Seed, 0x5eed))
	z, zd := ZFor(opts.Confidence), ZFor(opts.DecisionConfidence)
	c := Comparison{
		Confidence: opts.Confidence, DecisionConfidence: opts.DecisionConfidence, Resamples: opts.Resamples, Seed: opts.Seed,
		Correction: "Holm (1979) step-down on segment McNemar exact p-values; family-wise α = 1 − confidence",
		Segments:   []Segment{},
	}
	all := make([]int, len(inc))
	for i := range all {
		all[i] = i
	}
	c.Incumbent, c.Candidate, c.Quality = compareIdx(inc, cand, all, z, zd, opts, rng, !opts.NoArmIntervals)
	c.CostTest = CostRatioTest(inc, cand, all)
	c.P95Test = QuantileRatioTest(inc, cand, all, 95)
	c.CostRatio, c.CostRatioCI = c.CostTest.Ratio, c.CostTest.Interval(zd)
	c.P95Ratio, c.P95RatioCI = c.P95Test.Ratio, c.P95Test.Interval(zd)

	bySeg := map[string][]int{}
	for i, o := range inc {
		for _, s := range o.Segments {
			bySeg[s] = append(bySeg[s], i)
		}
	}
	names := make([]string, 0, len(bySeg))
	for s := range bySeg {
		names = append(names, s)
	}
	slices.Sort(names)
	ps := make([]float64, len(names))
	for k, name := range names {
		a, b, q := compareIdx(inc, cand, bySeg[name], z, zd, opts, rng, false)
		c.Segments = append(c.Segments, Segment{Name: name, Incumbent: a, Candidate: b, Quality: q})
		ps[k] = q.McNemarP
	}
	for k, adj := range Holm(ps) {
		c.Segments[k].AdjustedP = adj
	}

	alpha := 1 - opts.Confidence
	n, err := McNemarSampleSize(opts.Effect, c.Quality.DiscordantRate, alpha, opts.Power)
	if err != nil {
		return Comparison{}, fmt.Errorf("stats: compare: %w", err)
	}
	c.SampleSize = SampleSize{Effect: opts.Effect, Alpha: alpha, Power: opts.Power, Discordant: c.Quality.DiscordantRate, N: n}
	return c, nil
}

// compareIdx computes both arms (intervals at normal quantile z) and the
// paired quality figures (interval at zd) over the cases idx. With latency
// true it bootstraps the arms' latency percentile intervals (resampling
// cases, the same draw for both arms); otherwise they stay at their point
// values.
func compareIdx(inc, cand []Obs, idx []int, z, zd float64, opts Options, rng *rand.Rand, latency bool) (a, b Arm, q Paired) {
	a = arm(inc, idx, z)
	b = arm(cand, idx, z)
	// Quality pairs: both graded.
	var pairs []int
	for _, i := range idx {
		if inc[i].Graded && cand[i].Graded {
			pairs = append(pairs, i)
			switch {
			case inc[i].Passed && cand[i].Passed:
				q.Both++
			case inc[i].Passed:
				q.IncumbentOnly++
			case cand[i].Passed:
				q.CandidateOnly++
			default:
				q.Neither++
			}
		}
	}
	q = PairedOf(q.Both, q.IncumbentOnly, q.CandidateOnly, q.Neither, zd)
	if q.N > 0 {
		d, continuous := differences(inc, cand, pairs)
		q.DiffSD = sd(d)
		if continuous {
			strata := make([]string, len(pairs))
			for k, i := range pairs {
				strata[k] = stratum(inc[i].Segments)
			}
			t, stratified := newMeanScoreTest(d, strata)
			q.Diff, q.Method = t.mean, MethodMeanScore
			if stratified {
				q.Method = MethodMeanScoreStratified
			}
			// The score statistic on the normal scale: the one-sided p-value
			// of its t quantile at the effective degrees of freedom.
			q.ZAt = func(theta float64) float64 { return tToZ(t.z(theta), t.df) }
			q.DiffCI = Interval{-1, 1}
			if q.N >= 2 {
				q.DiffCI = scoreInterval(t.z, t.mean, tFor(zd, t.df))
			}
		}
	}
	if !latency {
		return a, b, q
	}

	lo, hi := (1-opts.Confidence)/2*100, (1+opts.Confidence)/2*100
	B := opts.Resamples
	// A resample is held as a count per case; percentiles are read by walking
	// each arm's cases in latency order until the nearest rank is reached
	// (O(n) per resample).
	n := len(idx)
	var la, lb [3][]float64
	for k := range 3 {
		la[k] = make([]float64, B)
		lb[k] = make([]float64, B)
	}
	ordA, ordB := byLatency(inc, idx), byLatency(cand, idx)
	counts := make([]int, n)
	for r := range B {
		clear(counts)
		for range n {
			counts[draw(rng, n)]++
		}
		walk(inc, idx, ordA, counts, la, r)
		walk(cand, idx, ordB, counts, lb, r)
	}
	ci := func(v []float64) Interval {
		slices.Sort(v)
		return Interval{Low: NearestRank(v, lo), High: NearestRank(v, hi)}
	}
	a.P50LatencyCI, a.P95LatencyCI, a.P99LatencyCI = ci(la[0]), ci(la[1]), ci(la[2])
	b.P50LatencyCI, b.P95LatencyCI, b.P99LatencyCI = ci(lb[0]), ci(lb[1]), ci(lb[2])
	return a, b, q
}

// PairedOf is the pass/fail Paired of the four pair counts (both passed,
// only the incumbent, only the candidate, neither) with Tango's interval at
// normal quantile z and its score statistic.
func PairedOf(both, incOnly, candOnly, neither int, z float64) Paired {
	q := Paired{Method: MethodTango, Both: both, IncumbentOnly: incOnly, CandidateOnly: candOnly, Neither: neither}
	q.N = both + incOnly + candOnly + neither
	q.McNemarP = McNemarExact(incOnly, candOnly)
	q.DiffCI = TangoInterval(candOnly, incOnly, q.N, z)
	if q.N > 0 {
		x, y, n := candOnly, incOnly, q.N
		q.ZAt = func(theta float64) float64 { return TangoZ(x, y, n, theta) }
		q.Diff = float64(candOnly-incOnly) / float64(q.N)
		q.DiscordantRate = float64(candOnly+incOnly) / float64(q.N)
	}
	return q
}

// byLatency returns positions 0..len(idx)-1 ordered by obs[idx[pos]].LatencyMs.
func byLatency(obs []Obs, idx []int) []int {
	ord := make([]int, 0, len(idx))
	for i := range idx {
		if figure.KnownLatency(obs[idx[i]].LatencyMs) {
			ord = append(ord, i)
		}
	}
	slices.SortStableFunc(ord, func(a, b int) int {
		return cmpFloat(obs[idx[a]].LatencyMs, obs[idx[b]].LatencyMs)
	})
	return ord
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// walk stores in out[k][r] the resample's p50, p95 and p99 (k = 0, 1, 2) of
// the known latencies, by figure.Latency's definition: the nearest ranks among
// the resampled cases in ord (those with a known latency), counted with their
// multiplicity in counts. 0 when the resample drew none.
func walk(obs []Obs, idx, ord, counts []int, out [3][]float64, r int) {
	m := 0
	for _, pos := range ord {
		m += counts[pos]
	}
	if m == 0 {
		for k := range 3 {
			out[k][r] = 0
		}
		return
	}
	var ranks [3]int
	for k, p := range []float64{50, 95, 99} {
		ranks[k] = percentile.Rank(m, p)
	}
	seen, k := 0, 0
	for _, pos := range ord {
		seen += counts[pos]
		for k < 3 && seen >= ranks[k] {
			out[k][r] = obs[idx[pos]].LatencyMs
			k++
		}
		if k == 3 {
			return
		}
	}
}

// arm computes one side's point figures over idx.
func arm(obs []Obs, idx []int, z float64) Arm {
	var a Arm
	a.N = len(idx)
	if a.N == 0 {
		a.AccuracyCI = Interval{0, 1}
		return a
	}
	lat := make([]float64, 0, len(idx))
	var tin, tout, calls int64
	for _, i := range idx {
		o := obs[i]
		if o.Graded {
			a.Graded++
			if o.Passed {
				a.Passed++
			}
		}
		a.TotalCostUSD += o.CostUSD
		tin += o.TokensIn
		tout += o.TokensOut
		calls += int64(o.Calls)
		lat = append(lat, o.LatencyMs)
	}
	a.Accuracy = figure.Accuracy(a.Passed, a.Graded)
	a.AccuracyCI = Wilson(a.Passed, a.Graded, z)
	n := float64(a.N)
	// Each index is one case, one request: N distinct requests.
	a.CostPerRequestUSD = figure.CostPerRequest(a.TotalCostUSD, a.N)
	a.MeanTokensIn = float64(tin) / n
	a.MeanTokensOut = float64(tout) / n
	a.MeanCalls = float64(calls) / n
	ps := figure.Latencies(lat, 50, 95, 99)
	a.P50LatencyMs, a.P95LatencyMs, a.P99LatencyMs = ps[0], ps[1], ps[2]
	a.P50LatencyCI = Interval{a.P50LatencyMs, a.P50LatencyMs}
	a.P95LatencyCI = Interval{a.P95LatencyMs, a.P95LatencyMs}
	a.P99LatencyCI = Interval{a.P99LatencyMs, a.P99LatencyMs}
	return a
}

// Differences returns the per-case quality differences candidate − incumbent
// over the cases both sides' graders judged, in input order: the score
// difference when some such case has a score strictly between 0 and 1
// (continuous is then true), else +1/0/−1 from the pass/fail grades. It is
// what Compare's quality interval and the sequential test are computed on.
func Differences(inc, cand []Obs) (d []float64, continuous bool) {
	var pairs []int
	for i := range min(len(inc), len(cand)) {
		if inc[i].Graded && cand[i].Graded {
			pairs = append(pairs, i)
		}
	}
	return differences(inc, cand, pairs)
}

func differences(inc, cand []Obs, pairs []int) (d []float64, continuous bool) {
	for _, i := range pairs {
		continuous = continuous || (inc[i].Score > 0 && inc[i].Score < 1) || (cand[i].Score > 0 && cand[i].Score < 1)
	}
	d = make([]float64, len(pairs))
	for k, i := range pairs {
		if continuous {
			d[k] = cand[i].Score - inc[i].Score
		} else {
			d[k] = b2f(cand[i].Passed) - b2f(inc[i].Passed)
		}
	}
	return d, continuous
}

// stratum is the case's "category:" segment, "" without one.
func stratum(segs []string) string {
	for _, s := range segs {
		if len(s) > 9 && s[:9] == "category:" {
			return s
		}
	}
	return ""
}

// sd is the sample standard deviation (n − 1, gonum's stat.Variance); 0 for
// fewer than two values.
func sd(xs []float64) float64 {
	if len(xs) < 2 {
		return 0
	}
	return math.Sqrt(stat.Variance(xs, nil))
}

func ratio(num, den float64) float64 {
	switch {
	case den != 0:
		return num / den
	case num == 0:
		return 1
	}
	return MaxRatio
}

// MaxRatio stands for a ratio over a zero denominator.
const MaxRatio = 1e6

// draw returns a uniform index in [0, n) from 32 random bits by Lemire's
// multiply-shift (bias below n/2³², negligible for case counts).
func draw(rng *rand.Rand, n int) int {
	return int((uint64(rng.Uint32()) * uint64(n)) >> 32)
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
