package validity

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/conductor-shadow/conductor-shadow/eval/gate"
	"github.com/conductor-shadow/conductor-shadow/eval/stats"
)

// Model is the simulated suites' cost and latency per case. Each side's run
// cost is log-normal, cost = 0.002 USD · e^{CostSigma·Z} (× CostRatio for the
// candidate, divided by the log-normal's mean factor so the ratio of mean
// costs is exactly CostRatio), the two sides' Z correlated CostCorrelation;
// latency likewise, 1000 ms · e^{LatencySigma·Z} (× LatencyRatio for the
// candidate: a scale shift, so its p95 ratio is LatencyRatio), correlation
// LatencyCorrelation — a long request is slow on both sides.
type Model struct {
	CostRatio          float64 `json:"cost_ratio"`
	CostSigma          float64 `json:"cost_sigma"`
	CostCorrelation    float64 `json:"cost_correlation"`
	LatencyRatio       float64 `json:"latency_ratio"`
	LatencySigma       float64 `json:"latency_sigma"`
	LatencyCorrelation float64 `json:"latency_correlation"`
}

// NewDefaultModel returns equal cost and latency: cost log-sd 0.3 with
// uncorrelated sides, latency log-sd √½ ≈ 0.707 with correlation ½ (a
// per-request size factor of log-sd ½ shared by both sides times a run's own
// factor of log-sd ½).
func NewDefaultModel() Model {
	return Model{CostRatio: 1, CostSigma: 0.3, LatencyRatio: 1, LatencySigma: math.Sqrt(0.5), LatencyCorrelation: 0.5}
}

// Validate reports values no model can have.
func (m Model) Validate() error {
	switch {
	case !(m.CostRatio > 0) || !(m.LatencyRatio > 0) || math.IsInf(m.CostRatio, 0) || math.IsInf(m.LatencyRatio, 0):
		return fmt.Errorf("validity: model: cost and latency ratios must be finite and > 0, got %g and %g", m.CostRatio, m.LatencyRatio)
	case !(m.CostSigma >= 0) || !(m.LatencySigma >= 0) || m.CostSigma > 5 || m.LatencySigma > 5:
		return fmt.Errorf("validity: model: spreads must be in [0, 5], got %g and %g", m.CostSigma, m.LatencySigma)
	case !(math.Abs(m.CostCorrelation) <= 1) || !(math.Abs(m.LatencyCorrelation) <= 1):
		return fmt.Errorf("validity: model: correlations must be in [-1, 1], got %g and %g", m.CostCorrelation, m.LatencyCorrelation)
	}
	return nil
}

// CostSpread is the per-case spread of the cost ratio test's influence
// (stats.RatioTest.SpreadPerCase) under the model: with ψ = c/E c − i/E i and
// log-normal sides of log-sd σ and log-correlation ρ,
// Var ψ = 2(e^{σ²} − e^{ρσ²}).
func (m Model) CostSpread() float64 {
	s2 := m.CostSigma * m.CostSigma
	return math.Sqrt(math.Max(0, 2*(math.Exp(s2)-math.Exp(m.CostCorrelation*s2))))
}

// LatencySpread is the per-case spread of the p95 ratio test's influence
// under the model: for log-normal sides of log-sd σ and log-correlation ρ,
// Var ψ = σ²·2[p(1 − p) − (Φ₂(z, z; ρ) − p²)]/φ(z)², p = 0.95, z = Φ⁻¹(p)
// (Bahadur's representation, as stats.QuantileRatioTest).
func (m Model) LatencySpread() float64 {
	const p = 0.95
	z := distuv.UnitNormal.Quantile(p)
	f := distuv.UnitNormal.Prob(z)
	v := 2 * (p*(1-p) - (bivariateNormalCDF(z, z, m.LatencyCorrelation) - p*p)) / (f * f)
	return m.LatencySigma * math.Sqrt(math.Max(0, v))
}

// bivariateNormalCDF is P(X ≤ h, Y ≤ k) for standard normals of correlation
// rho: ∫_{−∞}^{h} φ(x) Φ((k − ρx)/√(1 − ρ²)) dx by Simpson's rule.
func bivariateNormalCDF(h, k, rho float64) float64 {
	if rho >= 1-1e-12 {
		return distuv.UnitNormal.CDF(math.Min(h, k))
	}
	if rho <= -1+1e-12 {
		return math.Max(0, distuv.UnitNormal.CDF(h)+distuv.UnitNormal.CDF(k)-1)
	}
	const steps = 4000
	lo := -10.0
	dx := (h - lo) / steps
	s := math.Sqrt(1 - rho*rho)
	f := func(x float64) float64 {
		return distuv.UnitNormal.Prob(x) * distuv.UnitNormal.CDF((k-rho*x)/s)
	}
	sum := f(lo) + f(h)
	for i := 1; i < steps; i++ {
		w := 2.0
		if i%2 == 1 {
			w = 4
		}
		sum += w * f(lo+float64(i)*dx)
	}
	return sum * dx / 3
}

// PolicyModel is the whole-policy plan's model (gate.PolicyModel) of these
// suites at incumbent accuracy pInc and discordance disc; with judge scores
// the quality gate is planned on the score difference's standard deviation.
func (m Model) PolicyModel(pInc, disc, effect float64, scores string) gate.PolicyModel {
	pm := gate.PolicyModel{PIncumbent: pInc, Discordance: disc,
		CostRatio: m.CostRatio, CostSpread: m.CostSpread(), LatencyRatio: m.LatencyRatio, LatencySpread: m.LatencySpread(),
		Segments: map[string]gate.SegmentModel{}}
	for _, s := range segmentNames {
		pm.Segments[s] = gate.SegmentModel{Share: 1 / float64(len(segmentNames)), Discordance: disc}
	}
	if scores == ScoresJudge {
		pm.ScoreSD, _ = judgeScoreSD(disc, effect)
	}
	return pm
}

// segmentNames are the categories simulated cases are spread over evenly.
var segmentNames = []string{"category:a", "category:b", "category:c"}

// Scores kinds (Config.Scores).
const (
	ScoresPassFail = "pass-fail"
	// ScoresJudge: a rubric judge's 1–10 scores, tie-heavy (judgeBase).
	ScoresJudge = "judge"
)

// judgeBase is the incumbent's judge-score distribution on 1..10: most
// answers score 8–10, as rubric judges grade.
var judgeBase = []float64{0.01, 0.01, 0.02, 0.03, 0.05, 0.08, 0.12, 0.20, 0.23, 0.25}

// judgeModel draws judge-scored pairs: the candidate's answer gets the
// incumbent's score (a tie) with probability 1 − D, else a fresh score from
// judgeBase exponentially tilted so the mean difference is E (0..1 units,
// 0.03 = 0.3 points on 1–10).
type judgeModel struct {
	disc float64
	cand []float64 // the tilted distribution
}

func mean10(w []float64) float64 {
	m := 0.0
	for i, p := range w {
		m += p * float64(i+1)
	}
	return m
}

func tilt(lam float64) []float64 {
	w := make([]float64, len(judgeBase))
	s := 0.0
	for i := range w {
		w[i] = judgeBase[i] * math.Exp(lam*float64(i+1))
		s += w[i]
	}
	for i := range w {
		w[i] /= s
	}
	return w
}

// newJudgeModel finds the tilt; it reports an effect the discordance cannot
// carry.
func newJudgeModel(disc, effect float64) (judgeModel, error) {
	target := mean10(judgeBase) + gate.JudgeScale*effect/disc
	if target <= 1.2 || target >= 9.8 {
		return judgeModel{}, fmt.Errorf("validity: judge scores: a mean difference of %+.2f points on 1–10 needs more than %.0f%% of pairs judged afresh", gate.JudgeScale*effect, 100*disc)
	}
	lo, hi := -20.0, 20.0
	for range 200 {
		mid := (lo + hi) / 2
		if mean10(tilt(mid)) < target {
			lo = mid
		} else {
			hi = mid
		}
	}
	return judgeModel{disc: disc, cand: tilt((lo + hi) / 2)}, nil
}

func drawScore(rng *rand.Rand, w []float64) int {
	u := rng.Float64()
	for i, p := range w {
		if u < p {
			return i + 1
		}
		u -= p
	}
	return len(w)
}

// pair returns the incumbent's and the candidate's 1–10 scores.
func (j judgeModel) pair(rng *rand.Rand) (inc, cand int) {
	inc = drawScore(rng, judgeBase)
	cand = inc
	if rng.Float64() < j.disc {
		cand = drawScore(rng, j.cand)
	}
	return inc, cand
}

// judgeScoreSD is the standard deviation of the per-case score difference
// (0..1 units) of the judge model, computed exactly over its distribution.
func judgeScoreSD(disc, effect float64) (float64, error) {
	j, err := newJudgeModel(disc, effect)
	if err != nil {
		return 0, err
	}
	var m2 float64
	for a, pa := range judgeBase {
		for b, pb := range j.cand {
			d := float64(b-a) / gate.JudgeScale
			m2 += disc * pa * pb * d * d
		}
	}
	return math.Sqrt(math.Max(0, m2-effect*effect)), nil
}

// caseDraw draws cases of a Config.
type caseDraw struct {
	rng                 *rand.Rand
	pBoth, pInc, pCand  float64 // pass/fail: P(both pass), P(only the incumbent), P(only the candidate)
	judge               *judgeModel
	model               Model
	costScale, latScale float64    // the candidate's factors, mean-corrected
	costMean            float64    // e^{σ²/2}, the mean of e^{σZ} for the cost's σ
	segments            [][]string // one read-only Obs.Segments per name of segmentNames
}

func newDraw(cfg Config, s uint64) (*caseDraw, error) {
	pInc := (cfg.Discordance - cfg.Effect) / 2
	c := &caseDraw{rng: rand.New(rand.NewPCG(cfg.Seed, s)), pInc: pInc, pCand: (cfg.Discordance + cfg.Effect) / 2,
		pBoth: cfg.PIncumbent - pInc, model: cfg.Model}
	if cfg.Scores == ScoresJudge {
		j, err := newJudgeModel(cfg.Discordance, cfg.Effect)
		if err != nil {
			return nil, err
		}
		c.judge = &j
	}
	c.costScale = cfg.Model.CostRatio
	c.latScale = cfg.Model.LatencyRatio
	c.costMean = math.Exp(cfg.Model.CostSigma * cfg.Model.CostSigma / 2)
	for _, name := range segmentNames {
		c.segments = append(c.segments, []string{name})
	}
	return c, nil
}

// correlated returns two standard normals of correlation rho.
func (c *caseDraw) correlated(rho float64) (float64, float64) {
	a, b := c.rng.NormFloat64(), c.rng.NormFloat64()
	return a, rho*a + math.Sqrt(1-rho*rho)*b
}

// next returns the next case's incumbent and candidate observations, the
// incumbent's with a category segment.
func (c *caseDraw) next() (inc, cand stats.Obs) {
	inc.Graded, cand.Graded = true, true
	if c.judge != nil {
		a, b := c.judge.pair(c.rng)
		inc.Score, cand.Score = float64(a)/gate.JudgeScale, float64(b)/gate.JudgeScale
		inc.Passed, cand.Passed = a >= 7, b >= 7
	} else {
		switch u := c.rng.Float64(); {
		case u < c.pBoth:
			inc.Passed, cand.Passed = true, true
		case u < c.pBoth+c.pInc:
			inc.Passed = true
		case u < c.pBoth+c.pInc+c.pCand:
			cand.Passed = true
		}
		inc.Score, cand.Score = b2f(inc.Passed), b2f(cand.Passed)
	}
	m := c.model
	zi, zc := c.correlated(m.CostCorrelation)
	// e^{σZ} has mean e^{σ²/2}: divide it out so the mean cost is 0.002 USD.
	mc := c.costMean
	inc.CostUSD = 0.002 * math.Exp(m.CostSigma*zi) / mc
	cand.CostUSD = c.costScale * 0.002 * math.Exp(m.CostSigma*zc) / mc
	li, lc := c.correlated(m.LatencyCorrelation)
	inc.LatencyMs = 1000 * math.Exp(m.LatencySigma*li)
	cand.LatencyMs = c.latScale * 1000 * math.Exp(m.LatencySigma*lc)
	inc.Calls, cand.Calls = 1, 1
	inc.Segments = c.segments[c.rng.IntN(len(c.segments))] // shared: Compare only reads it
	return inc, cand
}

// diff is the per-case quality difference the sequential test takes: the
// score difference (±1/0 for pass/fail grades, whose scores are 0 and 1).
func diff(inc, cand stats.Obs) float64 { return cand.Score - inc.Score }

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
