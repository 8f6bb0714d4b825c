package gate

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/conductor-shadow/conductor-shadow/eval/stats"
)

// PolicyModel is what a whole-policy plan assumes about the cases still to
// come. Ratios are candidate / incumbent; spreads are per-case standard
// deviations of the log ratio's influence (stats.RatioTest.SpreadPerCase),
// so a gate's standard error at n cases is spread/√n.
type PolicyModel struct {
	// Quality, pass/fail grades: the incumbent's accuracy and the share of
	// discordant pairs (0..1).
	PIncumbent  float64 `json:"p_incumbent"`
	Discordance float64 `json:"discordance"`
	// ScoreSD > 0: continuous judge scores, the standard deviation of the
	// per-case score difference (0..1 units); the quality gate is then planned
	// with the normal approximation (stats.NormalOperating).
	ScoreSD float64 `json:"score_sd,omitempty"`
	// Cost per request and p95 latency. A spread of 0 makes the ratio exact;
	// a negative spread means unknown (the gate is left out of the plan and
	// the plan says so).
	CostRatio     float64 `json:"cost_ratio"`
	CostSpread    float64 `json:"cost_spread"`
	LatencyRatio  float64 `json:"latency_ratio"`
	LatencySpread float64 `json:"latency_spread"`
	// Segments are the must-not-regress segments' shares of the cases and
	// discordances, by name.
	Segments map[string]SegmentModel `json:"segments,omitempty"`
}

// SegmentModel is one segment's share of the cases (0..1) and its share of
// discordant pairs.
type SegmentModel struct {
	Share       float64 `json:"share"`
	Discordance float64 `json:"discordance"`
}

// GatePlan is one gate's part in a whole-policy plan: the cases it alone
// needs for the planned power of PASS if the candidate is equal (cost and
// latency as modelled) and of FAIL if it is worse by the effect; 0 when it
// plays no part; Note says why a target cannot be reached.
type GatePlan struct {
	Gate  string `json:"gate"`
	PassN int    `json:"pass_n,omitempty"`
	FailN int    `json:"fail_n,omitempty"`
	Note  string `json:"note,omitempty"`
}

// PolicyPlan is the whole policy's sample size: the smallest n at which the
// verdict is PASS with probability ≥ PlannedPower when the candidate's
// quality equals the incumbent's (cost and latency as in Model), PassN, and
// FAIL with probability ≥ PlannedPower when it is worse by EffectPoints,
// FailN; N is the larger (0 when a target cannot be reached: PassReachable
// or FailReachable false, with the gate's Note).
//
// How the verdict probabilities are computed — the model: P(PASS) is the
// product of the gates' PASS probabilities (quality and each segment exact:
// stats.Operating over the trinomial of discordant pairs, or the normal
// approximation for judge scores; cost and p95 latency from their Wald tests
// on the log ratio, Φ((log r − log R)/(spread/√n) − z)); PASS needs every
// gate, and the gates' PASS events are positively associated (a lucky run
// helps all), so the product is a lower bound. P(FAIL) is the largest single
// gate's FAIL probability (quality or a segment worse by the effect), again
// a lower bound of "any gate FAILs". Both are checked by simulation through
// the gate code in eval/validity (TestPolicyPlanTargets).
type PolicyPlan struct {
	Model         PolicyModel `json:"model"`
	EffectPoints  float64     `json:"effect_points"`
	Power         float64     `json:"power"`         // asked
	PlannedPower  float64     `json:"planned_power"` // Power + stats.PlanMargin (at most halfway to 1)
	Boundary      float64     `json:"boundary"`      // the one-sided z the plan's last look decides at
	PassN         int         `json:"pass_n"`
	FailN         int         `json:"fail_n"`
	N             int         `json:"n"`
	PassReachable bool        `json:"pass_reachable"`
	FailReachable bool        `json:"fail_reachable"`
	Gates         []GatePlan  `json:"gates"`
	// Binding names the gate that needs the most cases.
	Binding string `json:"binding"`
	// IfEqual and IfWorse are the whole policy's verdict probabilities at N
	// (as above; Inconclusive is the rest).
	IfEqual stats.OC `json:"if_equal"`
	IfWorse stats.OC `json:"if_worse"`
}

// PlannedPower is the power a plan aims at for an asked power: power +
// stats.PlanMargin, at most halfway to 1 (stats.Recommend).
func PlannedPower(power float64) float64 {
	return math.Round(1e9*math.Min(power+stats.PlanMargin, (1+power)/2)) / 1e9
}

// gateProbs is one gate's PASS (equal) and FAIL (worse) probability at n.
type gateProbs struct {
	gate       string
	pass, fail func(n int) float64
	note       string // why the gate is left out, or why PASS cannot be reached
	blocks     bool   // PASS cannot be reached at any n
}

// PlanPolicy plans p's whole policy under m for the asked power, the last
// look deciding at the one-sided boundary z (stats.Z95-like; pass
// stats.ZFor(p.Confidence) for a fixed n). The effect is p's quality effect
// (EffectPoints). It returns an error for a policy without a gate it can plan
// or a model outside its ranges.
func PlanPolicy(p Policy, m PolicyModel, power, z float64) (PolicyPlan, error) {
	if !(power > 0 && power < 1) {
		return PolicyPlan{}, fmt.Errorf("gate: plan: power must be in (0, 1), got %g", power)
	}
	if !(z > 0) || math.IsInf(z, 0) {
		return PolicyPlan{}, fmt.Errorf("gate: plan: boundary must be finite and > 0, got %g", z)
	}
	pl := PolicyPlan{Model: m, Power: power, PlannedPower: PlannedPower(power), Boundary: z}
	gates, effect, err := planGates(p, m, z)
	if err != nil {
		return PolicyPlan{}, err
	}
	pl.EffectPoints = 100 * effect
	passAll := func(n int) float64 {
		if n < p.MinN {
			return 0
		}
		prod := 1.0
		for _, g := range gates {
			if g.blocks {
				return 0
			}
			if g.pass != nil {
				prod *= g.pass(n)
			}
		}
		return prod
	}
	failAny := func(n int) float64 {
		best := 0.0
		for _, g := range gates {
			if g.fail != nil {
				best = math.Max(best, g.fail(n))
			}
		}
		return best
	}
	target := pl.PlannedPower
	blocked := false
	for _, g := range gates {
		gp := GatePlan{Gate: g.gate, Note: g.note}
		blocked = blocked || g.blocks
		if g.pass != nil && !g.blocks {
			gp.PassN, _ = stats.SmallestN(func(n int) bool { return g.pass(n) >= target }, max(1, p.MinN))
		}
		if g.fail != nil {
			gp.FailN, _ = stats.SmallestN(func(n int) bool { return g.fail(n) >= target }, max(1, p.MinN))
		}
		pl.Gates = append(pl.Gates, gp)
	}
	// PASS needs every gate: no fewer cases than the neediest gate alone.
	// FAIL needs one: the fewest any gate alone needs.
	passFrom, failAt := max(1, p.MinN), 0
	for _, g := range pl.Gates {
		passFrom = max(passFrom, g.PassN)
		if g.FailN > 0 && (failAt == 0 || g.FailN < failAt) {
			failAt = g.FailN
		}
	}
	if !blocked {
		pl.PassN, pl.PassReachable = stats.SmallestN(func(n int) bool { return passAll(n) >= target }, passFrom)
	}
	hasFail := slices.ContainsFunc(gates, func(g gateProbs) bool { return g.fail != nil })
	if hasFail && effect > 0 && failAt > 0 {
		pl.FailN, pl.FailReachable = max(failAt, p.MinN), true
	}
	pl.N = max(pl.PassN, pl.FailN)
	if !pl.PassReachable || (hasFail && effect > 0 && !pl.FailReachable) {
		pl.N = 0
	}
	best := 0
	for _, g := range pl.Gates {
		if k := max(g.PassN, g.FailN); k > best {
			best, pl.Binding = k, g.Gate
		}
	}
	if n := max(pl.N, pl.PassN, pl.FailN); n > 0 {
		pl.IfEqual = stats.OC{N: n, Pass: passAll(n)}
		pl.IfEqual.Inconclusive = 1 - pl.IfEqual.Pass
		pl.IfWorse = stats.OC{N: n, Fail: failAny(n)}
		pl.IfWorse.Inconclusive = 1 - pl.IfWorse.Fail
	}
	return pl, nil
}

// planGates builds each gate's probabilities at boundary z. effect is the
// quality effect (0..1) the FAIL side is planned for.
func planGates(p Policy, m PolicyModel, z float64) (gates []gateProbs, effect float64, err error) {
	conf := stats.LookConfidence(z)
	if q := p.Quality; q != nil {
		effect = q.Effect() / 100
		d := q.Design(conf)
		g, err := qualityProbs("quality", d, m.PIncumbent, m.Discordance, m.ScoreSD, effect, 1)
		if err != nil {
			return nil, 0, err
		}
		gates = append(gates, g)
	}
	if c := p.Cost; c != nil {
		gates = append(gates, ratioProbs("cost", "cost/request", c.MaxRatio, m.CostRatio, m.CostSpread, z, 2))
	}
	if l := p.Latency; l != nil {
		g := ratioProbs("latency", "p95 latency", l.MaxP95Ratio, m.LatencyRatio, m.LatencySpread, z, stats.MinQuantileN)
		gates = append(gates, g)
	}
	if s := p.Segments; s != nil {
		if effect == 0 {
			effect = 0.05
		}
		d := stats.Design{Margin: p.SegmentMargin() / 100, FailAt: p.SegmentFail() / 100, Confidence: conf}
		for _, name := range s.MustNotRegress {
			sm, ok := m.Segments[name]
			if !ok || sm.Share <= 0 {
				gates = append(gates, gateProbs{gate: "segment " + name, note: "the segment has no cases in the plan's model: it can never PASS", blocks: true})
				continue
			}
			g, err := qualityProbs("segment "+name, d, m.PIncumbent, sm.Discordance, m.ScoreSD, effect, sm.Share)
			if err != nil {
				return nil, 0, err
			}
			minN := max(s.MinN, 1)
			pass, fail := g.pass, g.fail
			g.pass = func(n int) float64 {
				if int(sm.Share*float64(n)) < minN {
					return 0
				}
				return pass(n)
			}
			g.fail = func(n int) float64 {
				if int(sm.Share*float64(n)) < minN {
					return 0
				}
				return fail(n)
			}
			gates = append(gates, g)
		}
	}
	if len(gates) == 0 {
		return nil, 0, fmt.Errorf("gate: plan: the policy has no gate a plan covers (quality, cost, latency, segments)")
	}
	return gates, effect, nil
}

// qualityProbs is a quality-like gate's PASS-if-equal and FAIL-if-worse
// probabilities on share·n pairs: exact (stats.Operating) for pass/fail
// grades at the discordance raised to at least the effect, normal for judge
// scores.
func qualityProbs(name string, d stats.Design, pInc, disc, scoreSD, effect, share float64) (gateProbs, error) {
	at := func(n int) int { return int(math.Round(share * float64(n))) }
	if scoreSD > 0 {
		return gateProbs{gate: name,
			pass: func(n int) float64 { return stats.NormalOperating(at(n), scoreSD, 0, d).Pass },
			fail: func(n int) float64 { return stats.NormalOperating(at(n), scoreSD, -effect, d).Fail },
		}, nil
	}
	eq, worse := PlanScenarios(pInc, disc, effect)
	if err := eq.Validate(); err != nil {
		return gateProbs{}, fmt.Errorf("gate: plan %s: %w", name, err)
	}
	// The searches ask for the same n many times: keep each answer.
	memo := func(s stats.Scenario, pick func(stats.OC) float64) func(int) float64 {
		seen := map[int]float64{}
		return func(n int) float64 {
			k := at(n)
			if v, ok := seen[k]; ok {
				return v
			}
			oc, _ := stats.Operating(k, s, d)
			seen[k] = pick(oc)
			return seen[k]
		}
	}
	g := gateProbs{gate: name,
		pass: memo(eq, func(oc stats.OC) float64 { return oc.Pass }),
		fail: memo(worse, func(oc stats.OC) float64 { return oc.Fail }),
	}
	if effect <= d.FailAt {
		g.fail = nil
	}
	return g, nil
}

// PlanScenarios are the equal and worse-by-effect scenarios a plan is
// computed for at incumbent accuracy pInc and discordance disc: the
// discordance is raised to the effect + 0.1 point when below (a drop of e
// needs at least that share of discordant pairs), and the incumbent's
// accuracy kept where both discordant cells fit. PlannedDiscordance reports
// the discordance used.
func PlanScenarios(pInc, disc, effect float64) (eq, worse stats.Scenario) {
	disc = PlannedDiscordance(disc, effect)
	half := (disc + effect) / 2 // the larger discordant cell of the worse scenario
	pInc = math.Min(1-half-0.001, math.Max(half+0.001, pInc))
	return stats.Scenario{PIncumbent: pInc, Discordance: disc}, stats.Scenario{PIncumbent: pInc, Discordance: disc, Effect: -effect}
}

// PlannedDiscordance is the discordance a plan uses for an observed one:
// at least effect + 0.001 (and at most 1).
func PlannedDiscordance(observed, effect float64) float64 {
	return math.Min(1, math.Max(observed, effect+0.001))
}

// ratioProbs is a ratio gate's PASS probability at n under the Wald test of
// the log ratio: Φ((log ceiling − log ratio)/(spread/√n) − z), 0 below minN
// cases. A negative spread (unknown) leaves the gate out with a note; a
// modelled ratio at or above the ceiling cannot PASS.
func ratioProbs(gate, what string, ceiling, ratio, spread, z float64, minN int) gateProbs {
	g := gateProbs{gate: gate}
	switch {
	case spread < 0 || math.IsNaN(spread) || math.IsInf(spread, 0):
		g.note = fmt.Sprintf("%s spread unknown (too few observations): left out of the plan", what)
		g.pass = nil
		return g
	case ratio >= ceiling:
		g.note = fmt.Sprintf("%s ratio %.3f is not below its ceiling %.3f: PASS cannot be planned at any n", what, ratio, ceiling)
		g.blocks = true
		return g
	}
	g.pass = func(n int) float64 {
		if n < minN {
			return 0
		}
		if spread == 0 {
			return 1
		}
		se := spread / math.Sqrt(float64(n))
		return normalCDF((math.Log(ceiling)-math.Log(ratio))/se - z)
	}
	return g
}

func normalCDF(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }

// Markdown renders the plan in one paragraph: N, the binding gate and each
// gate's own needs, the powers asked and planned for, and the model.
func (pl PolicyPlan) Markdown() string {
	var b strings.Builder
	method := stats.MethodTango
	if pl.Model.ScoreSD > 0 {
		method = stats.MethodMeanScore
	}
	switch {
	case pl.N > 0:
		fmt.Fprintf(&b, "Whole policy: %d cases for %.0f%% PASS if equal (%d) and %.0f%% FAIL if %s worse (%d), planned at %.0f%% (%.0f%% asked + a %.0f-point planning margin); binding gate: %s.",
			pl.N, 100*pl.Power, pl.PassN, 100*pl.Power, MarginText(method, pl.EffectPoints), pl.FailN, 100*pl.PlannedPower, 100*pl.Power, 100*(pl.PlannedPower-pl.Power), pl.Binding)
	case !pl.PassReachable:
		fmt.Fprintf(&b, "Whole policy: PASS if equal cannot be planned at any n.")
	default:
		fmt.Fprintf(&b, "Whole policy: no n up to %d reaches the planned %.0f%%.", stats.MaxPlanN, 100*pl.PlannedPower)
	}
	var parts []string
	for _, g := range pl.Gates {
		s := g.Gate
		if g.PassN > 0 {
			s += fmt.Sprintf(" PASS %d", g.PassN)
		}
		if g.FailN > 0 {
			s += fmt.Sprintf(" FAIL %d", g.FailN)
		}
		if g.Note != "" {
			s += " (" + g.Note + ")"
		}
		parts = append(parts, s)
	}
	if len(parts) > 0 {
		fmt.Fprintf(&b, " Each gate alone: %s.", strings.Join(parts, "; "))
	}
	m := pl.Model
	if m.ScoreSD > 0 {
		fmt.Fprintf(&b, " Model: judge-score difference sd %.3f", m.ScoreSD)
	} else {
		fmt.Fprintf(&b, " Model: incumbent accuracy %.1f%%, %.1f%% discordant pairs", 100*m.PIncumbent, 100*m.Discordance)
	}
	spread := func(x float64) string {
		if x < 0 {
			return "unknown"
		}
		return strconv.FormatFloat(x, 'g', 3, 64)
	}
	fmt.Fprintf(&b, ", cost ratio %.3f (spread %s), p95 ratio %.3f (spread %s).\n", m.CostRatio, spread(m.CostSpread), m.LatencyRatio, spread(m.LatencySpread))
	return b.String()
}
