package gate

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

var liveT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// pairDraw draws live pairs: the incumbent right with probability pInc, the
// candidate's answer differing in correctness on a share disc of pairs, its
// accuracy pInc + effect; equal cost (0.002 USD) and latency (log-normal
// around 1 s) on both sides unless scaled.
type pairDraw struct {
	rng                     *rand.Rand
	pBoth, pIncOnly, pCand  float64
	costScale, latencyScale float64
}

func newPairDraw(seed uint64, pInc, disc, effect float64) *pairDraw {
	return &pairDraw{rng: rand.New(rand.NewPCG(seed, 99)), pIncOnly: (disc - effect) / 2, pCand: (disc + effect) / 2,
		pBoth: pInc - (disc-effect)/2, costScale: 1, latencyScale: 1}
}

// next returns the i-th pair: judged with probability pi (a win when only
// the candidate is right, a loss when only the incumbent is, else a tie).
func (d *pairDraw) next(i int, pi float64) LiveObs {
	var diff float64
	switch u := d.rng.Float64(); {
	case u < d.pBoth:
	case u < d.pBoth+d.pIncOnly:
		diff = -1
	case u < d.pBoth+d.pIncOnly+d.pCand:
		diff = 1
	}
	at := liveT0.Add(time.Duration(i) * time.Minute)
	o := LiveObs{Kind: LiveUnjudged, At: at, IncumbentUSD: 0.002 * math.Exp(0.3*d.rng.NormFloat64()), CandidateUSD: d.costScale * 0.002 * math.Exp(0.3*d.rng.NormFloat64()),
		IncumbentMs: 1000 * math.Exp(0.5*d.rng.NormFloat64()), CandidateMs: d.latencyScale * 1000 * math.Exp(0.5*d.rng.NormFloat64())}
	if d.rng.Float64() < pi {
		o.Kind, o.Score, o.InclusionProb, o.JudgedAt = LiveJudged, diff, pi, at
	}
	return o
}

// trusted is the evidence of a judge that passed its checks: no rows that
// withhold.
var trusted = LiveEvidence{}

func newSeq(t testing.TB, p Policy) *LiveSequence {
	t.Helper()
	seq, err := NewLiveSequence(p)
	if err != nil {
		t.Fatal(err)
	}
	return seq
}

func gateOf(v LiveVerdict, name string) *Result {
	for i := range v.Gates {
		if v.Gates[i].Gate == name {
			return &v.Gates[i]
		}
	}
	return nil
}

// The rule, each test on its own: an equal candidate PASSes with cost and
// p95 in their ceilings; one 8 points worse FAILs on quality; one twice as
// expensive or twice as slow FAILs on that test alone; withheld evidence
// makes any of them INCONCLUSIVE, naming why.
func TestLiveVerdictRule(t *testing.T) {
	pol := NewDefaultPolicy()
	cases := []struct {
		name            string
		effect          float64
		cost, latency   float64
		want            Status
		failing, action string
	}{
		{"equal", 0, 1, 1, Pass, "", ActionCutOver},
		{"worse", -0.08, 1, 1, Fail, "quality", ActionDoNotCutOver},
		{"expensive", 0, 2, 1, Fail, "cost", ActionDoNotCutOver},
		{"slow", 0, 1, 2, Fail, "latency", ActionDoNotCutOver},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			seq := newSeq(t, pol)
			d := newPairDraw(1, 0.85, 0.1, c.effect)
			d.costScale, d.latencyScale = c.cost, c.latency
			for i := range 40_000 {
				seq.Observe(d.next(i, 0.5))
			}
			v := seq.Verdict(trusted)
			if v.Verdict != c.want || v.Action != c.action {
				t.Fatalf("verdict %s (%s), want %s (%s): %+v", v.Verdict, v.Action, c.want, c.action, v.Gates)
			}
			if c.failing != "" && gateOf(v, c.failing).Status != Fail {
				t.Errorf("%s row = %+v, want FAIL", c.failing, gateOf(v, c.failing))
			}
			if !strings.Contains(v.RollbackRule, "-5.0 pts") {
				t.Errorf("rollback rule %q does not name −δ = −5 points (the policy's effect)", v.RollbackRule)
			}
			// Withheld evidence overrides every test.
			w := seq.Verdict(LiveEvidence{JudgeWithheld: []string{"judge x: position consistency 0.31 < 0.80"}})
			if w.Verdict != Inconclusive || w.Action != ActionKeepShadowing || !strings.Contains(w.Recommendation, "position consistency 0.31") {
				t.Errorf("withheld: %s, %q", w.Verdict, w.Recommendation)
			}
		})
	}
}

// Failed candidate runs are losses: a candidate whose answers equal the
// incumbent's but whose run fails on 15% of the requests FAILs — it cannot
// PASS by dropping its failures — while an unpaired request (no incumbent
// answer) counts in no test.
func TestLiveFailedRunsAreLosses(t *testing.T) {
	seq := newSeq(t, NewDefaultPolicy())
	d := newPairDraw(2, 0.85, 0.1, 0)
	rng := rand.New(rand.NewPCG(3, 3))
	for i := range 20_000 {
		o := d.next(i, 0.25)
		switch u := rng.Float64(); {
		case u < 0.15:
			o.Kind, o.Score, o.InclusionProb = LiveFailed, 0, 0
		case u < 0.17:
			o.Kind = LiveUnpaired
		}
		seq.Observe(o)
	}
	v := seq.Verdict(trusted)
	c := v.Counts
	if c.Failed < 2800 || c.Unpaired < 300 || c.Observed != 20_000 || c.Paired != c.Observed-c.Unpaired || c.Evidence != c.Judged+c.Failed {
		t.Fatalf("counts %+v", c)
	}
	if v.Verdict != Fail || gateOf(v, "quality").Status != Fail {
		t.Errorf("verdict %s, quality %+v: a candidate failing 15%% of runs must FAIL", v.Verdict, gateOf(v, "quality"))
	}
	// The weighted estimate: failures at π = 1, judged pairs at 1/0.25.
	// failures at π = 1 and judged pairs weighted 1/0.25 recover the mean
	// over every request: 15% losses, the rest even.
	if math.Abs(v.Quality.Estimate-(-0.15)) > 0.02 {
		t.Errorf("estimate %+.3f, want about −0.15", v.Quality.Estimate)
	}
}

// With one inclusion probability the weights are a common factor: the
// weighted estimate is the plain mean of the judged differences, and the
// test decides as on the unweighted pairs. When π depends on the request (a
// segment the candidate is worse on judged at 0.1, the rest at 0.9), the
// plain mean of the judged pairs is biased towards the well-judged segment
// and would PASS a candidate 6 points worse; the weighted test FAILs it.
func TestLiveInclusionWeights(t *testing.T) {
	pol := NewDefaultPolicy()
	seq := newSeq(t, pol)
	d := newPairDraw(4, 0.85, 0.2, 0)
	var sum float64
	var n int
	for i := range 8000 {
		o := d.next(i, 0.3)
		if o.Kind == LiveJudged {
			sum += o.Score
			n++
		}
		seq.Observe(o)
	}
	if got := seq.Verdict(trusted).Quality.Estimate; math.Abs(got-sum/float64(n)) > 1e-12 {
		t.Errorf("constant π: weighted estimate %v, plain judged mean %v", got, sum/float64(n))
	}

	// Varying π: segment "hard" (half the traffic) is 22 points worse and
	// judged at 0.1; "easy" is 10 points better and judged at 0.9. Overall
	// the candidate is 6 points worse.
	seq = newSeq(t, pol)
	hard, easy := newPairDraw(5, 0.8, 0.3, -0.22), newPairDraw(6, 0.8, 0.3, 0.10)
	sum, n = 0, 0
	for i := range 60_000 {
		o := easy.next(i, 0.9)
		o.Segments = []string{"easy"}
		if i%2 == 0 {
			o = hard.next(i, 0.1)
			o.Segments = []string{"hard"}
		}
		if o.Kind == LiveJudged {
			sum += o.Score
			n++
		}
		seq.Observe(o)
	}
	v := seq.Verdict(trusted)
	if plain := sum / float64(n); plain < 0 {
		t.Fatalf("the plain judged mean %+.3f is not biased upwards: the scenario shows nothing", plain)
	}
	if math.Abs(v.Quality.Estimate-(-0.06)) > 0.02 {
		t.Errorf("weighted estimate %+.3f, want about −0.06", v.Quality.Estimate)
	}
	if v.Verdict != Fail {
		t.Errorf("varying π: verdict %s, want FAIL (%s)", v.Verdict, gateOf(v, "quality").Reason)
	}
	if seq.ConstantInclusion() {
		t.Error("two inclusion probabilities reported as one")
	}
}

// Non-response never vanishes: judgments written after the settle time and
// pairs sampled below the floor count as lost, like judge errors and
// sampled pairs never judged (a spent judge budget), and stay
// out of the test; the judged sample's coverage check makes quality
// INCONCLUSIVE when judging stopped for part of the time or never ran.
func TestLiveNonResponseAndJudgeSample(t *testing.T) {
	pol := NewDefaultPolicy()
	seq := newSeq(t, pol)
	d := newPairDraw(7, 0.85, 0.1, 0)
	for i := range 40 {
		o := d.next(i, 1)
		switch i % 4 {
		case 0:
			o.JudgedAt = o.At.Add(2 * time.Hour) // settle is 1h
		case 1:
			o.InclusionProb = 0.05 // below the 0.1 floor
		case 2:
			o.Kind = LiveJudgeError
		default:
			o.Kind = LiveNotJudged // sampled, the judge budget spent
		}
		seq.Observe(o)
	}
	c := seq.Counts()
	if c.Late != 10 || c.BelowFloor != 10 || c.JudgeErrors != 10 || c.NotJudged != 10 || c.Lost != 40 || c.Evidence != 0 {
		t.Fatalf("counts %+v", c)
	}

	// Judging stopped for the second half of the traffic (a spent budget):
	// Σ 1/π counts half the answered pairs.
	seq = newSeq(t, pol)
	for i := range 40_000 {
		pi := 0.5
		if i >= 20_000 {
			pi = 0
		}
		seq.Observe(d.next(i, pi))
	}
	v := seq.Verdict(trusted)
	if q := gateOf(v, "quality"); q.Status != Inconclusive || !strings.Contains(q.Reason, "does not cover the answered pairs") {
		t.Errorf("half the traffic unjudged: quality %+v", q)
	}
	// No judging at all: failed runs alone are no evidence.
	seq = newSeq(t, pol)
	for i := range 5000 {
		o := d.next(i, 0)
		if i%10 == 0 {
			o.Kind = LiveFailed
		}
		seq.Observe(o)
	}
	v = seq.Verdict(trusted)
	if q := gateOf(v, "quality"); q.Status != Inconclusive || !strings.Contains(q.Reason, "none of the") {
		t.Errorf("judging off: quality %+v", q)
	}
}

// The rollback rule: a candidate that PASSes and then turns 30 points worse
// keeps its PASS evidence (the running maximum), but the lower bound read
// from the evidence now falls below −δ: the rule fires, the verdict is no
// longer PASS and the recommendation is to roll back.
func TestLiveRollbackRule(t *testing.T) {
	seq := newSeq(t, NewDefaultPolicy())
	good := newPairDraw(8, 0.85, 0.1, 0)
	i := 0
	for ; i < 60_000; i++ {
		seq.Observe(good.next(i, 0.5))
	}
	v := seq.Verdict(trusted)
	if v.Verdict != Pass || v.Rollback {
		t.Fatalf("before the drop: %s rollback %v (%+v)", v.Verdict, v.Rollback, v.Gates)
	}
	bad := newPairDraw(9, 0.85, 0.4, -0.3)
	for fired := false; !fired && i < 400_000; i++ {
		seq.Observe(bad.next(i, 0.5))
		if i%1000 == 0 {
			v = seq.Verdict(trusted)
			fired = v.Rollback
		}
	}
	if !v.Rollback || v.Action != ActionRollBack || v.Verdict == Pass || gateOf(v, GateRollback) == nil {
		t.Fatalf("after the drop: verdict %s, action %s, rollback %v, low now %+.3f", v.Verdict, v.Action, v.Rollback, v.Quality.LowNow)
	}
	if gateOf(v, "quality").Status != Pass {
		t.Errorf("the quality PASS is never taken back: %+v", gateOf(v, "quality"))
	}
}

// A listed segment is tested on its own pairs with the segment margin: a
// segment 25 points worse FAILs the verdict (Holm over the listed family);
// one absent from the traffic is INCONCLUSIVE, never PASS.
func TestLiveListedSegments(t *testing.T) {
	pol := NewDefaultPolicy()
	pol.Segments = &SegmentsGate{MustNotRegress: []string{"lang:ru", "lang:ja"}, MinN: 50}
	seq := newSeq(t, pol)
	en, ru := newPairDraw(10, 0.85, 0.1, 0.01), newPairDraw(11, 0.85, 0.4, -0.25)
	for i := range 40_000 {
		o := en.next(i, 0.5)
		o.Segments = []string{"lang:en"}
		if i%5 == 0 {
			o = ru.next(i, 0.5)
			o.Segments = []string{"lang:ru"}
		}
		seq.Observe(o)
	}
	v := seq.Verdict(trusted)
	if r := gateOf(v, "segment lang:ru"); r == nil || r.Status != Fail {
		t.Fatalf("lang:ru row %+v, want FAIL", r)
	}
	if r := gateOf(v, "segment lang:ja"); r == nil || r.Status != Inconclusive {
		t.Errorf("lang:ja row %+v, want INCONCLUSIVE (no traffic)", r)
	}
	if v.Verdict != Fail {
		t.Errorf("verdict %s, want FAIL", v.Verdict)
	}
}

// The live section of a policy: defaults, bounds, YAML.
func TestLiveRules(t *testing.T) {
	r := NewDefaultPolicy().LiveRules()
	if r.MinInclusionProb != DefaultMinInclusionProb || r.Settle != time.Hour || r.RollbackMarginPoints != 5 || r.CoverageP != DefaultCoverageP || r.MaxRunCostUSD != 0 {
		t.Errorf("defaults %+v", r)
	}
	p, err := Parse([]byte("version: x\nquality: {margin_points: 3}\nlive: {min_inclusion_prob: 0.2, settle: 30m, max_run_cost_usd: 0.5, rollback_margin_points: 8, coverage_p: 0.01}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if r := p.LiveRules(); r.MinInclusionProb != 0.2 || r.Settle != 30*time.Minute || r.MaxRunCostUSD != 0.5 || r.RollbackMarginPoints != 8 || r.CoverageP != 0.01 {
		t.Errorf("parsed %+v", r)
	}
	for _, bad := range []string{"min_inclusion_prob: 0", "min_inclusion_prob: 1.5", "settle: -1m", "max_run_cost_usd: -1", "rollback_margin_points: 100", "coverage_p: 1", "unknown: 1"} {
		if _, err := Parse([]byte("version: x\nquality: {margin_points: 3}\nlive: {" + bad + "}\n")); err == nil {
			t.Errorf("live %s accepted", bad)
		}
	}
	if _, err := NewLiveSequence(Policy{Version: "c", Confidence: 0.95, Cost: &CostGate{MaxRatio: 1.1}}); err == nil {
		t.Error("a policy without a quality gate started a live sequence")
	}
}
