package gate

import (
	"fmt"
	"math"

	"github.com/conductor-shadow/conductor-shadow/eval/stats"
)

// Look is one analysis of a group-sequential plan (LooksGate): the Index-th
// suite run of a set for one incumbent, candidate version and policy
// version, at information fraction Fraction = Cases / the plan's cases.
// Boundary is the one-sided z every gate's two sides decide at and
// Confidence the two-sided level whose intervals end exactly there
// (stats.LookConfidence); both 0 for a look that spends nothing
// (LookPlan.Blocked).
type Look struct {
	Index      int     `json:"index"`
	SuiteRunID string  `json:"suite_run_id"`
	Cases      int     `json:"cases"`
	MaxCases   int     `json:"max_cases"` // the plan's cases, fixed at look 1
	Fraction   float64 `json:"fraction"`
	Boundary   float64 `json:"boundary"`
	Confidence float64 `json:"confidence"`
}

// LookPlan is where a run stands in its group-sequential plan: the spending
// function, the plan's cases (MaxCases, fixed at the first look), the looks
// before this one and this one.
type LookPlan struct {
	Spending string  `json:"spending"`
	MaxCases int     `json:"max_cases"`
	Alpha    float64 `json:"alpha"` // one-sided level each side spends in all, α/2
	Previous []Look  `json:"previous,omitempty"`
	This     Look    `json:"this"`
	// Blocked: this look has no more cases than the last one, so it spends
	// nothing and every gate is INCONCLUSIVE.
	Blocked bool `json:"blocked,omitempty"`
	// Final: the fraction reached 1; the plan's α is spent and a further run
	// of this set and candidate version would decide nothing.
	Final bool `json:"final,omitempty"`
}

// fractions returns the information fractions of the previous looks and this.
func (lp LookPlan) fractions() []float64 {
	ts := make([]float64, 0, len(lp.Previous)+1)
	for _, l := range lp.Previous {
		ts = append(ts, l.Fraction)
	}
	return append(ts, lp.This.Fraction)
}

// Level returns the one-sided nominal level at this look of a test spending a
// total one-sided level a over the plan's looks with its spending function
// (1 − Φ of its boundary; 0 when the look spends nothing).
func (lp LookPlan) Level(a float64) float64 {
	if lp.Blocked {
		return 0
	}
	b, err := stats.Boundaries(lp.Spending, a, lp.fractions())
	if err != nil {
		return 0
	}
	return 1 - normalCDF(b[len(b)-1])
}

// NextLook places a run of cases paired graded cases in its plan: previous
// are the plan's earlier looks in order (none for the first run), maxCases
// the plan's cases for a first look (previous looks carry their own). It
// returns nil when the policy has no looks (spending none): the run is then a
// fixed-n test. An error means the previous looks are inconsistent.
func NextLook(p Policy, previous []Look, maxCases, cases int, suiteRunID string) (*LookPlan, error) {
	kind := p.LookSpending()
	if kind == SpendingNone {
		return nil, nil
	}
	a := (1 - p.Confidence) / 2
	lp := &LookPlan{Spending: kind, MaxCases: maxCases, Alpha: a, Previous: previous}
	if len(previous) > 0 {
		lp.MaxCases = previous[0].MaxCases
	}
	if lp.MaxCases <= 0 {
		return nil, fmt.Errorf("gate: next look: the plan has no cases (max %d)", lp.MaxCases)
	}
	last := 0.0
	for i, l := range previous {
		if l.Fraction <= last {
			return nil, fmt.Errorf("gate: next look: look %d has fraction %g after %g", i+1, l.Fraction, last)
		}
		last = math.Max(last, l.Fraction)
	}
	t := math.Min(1, float64(cases)/float64(lp.MaxCases))
	lp.This = Look{Index: len(previous) + 1, SuiteRunID: suiteRunID, Cases: cases, MaxCases: lp.MaxCases, Fraction: t}
	if t <= last || last >= 1 {
		lp.Blocked = true
		lp.This.Fraction = last
		lp.Final = last >= 1
		return lp, nil
	}
	b, err := stats.Boundaries(kind, a, lp.fractions())
	if err != nil {
		return nil, fmt.Errorf("gate: next look: %w", err)
	}
	lp.This.Boundary = b[len(b)-1]
	lp.This.Confidence = stats.LookConfidence(lp.This.Boundary)
	lp.Final = t >= 1
	return lp, nil
}

// levels returns the segment rule's levels at this look: the look's level of
// α/2 for PASS, and for Holm's step j of K the look's level of a test
// spending α/2/(K − j + 1) over the plan (each hypothesis spends its share by
// the same function, as in the graphical group-sequential procedures of
// Maurer & Bretz 2013, "Multiple testing in group sequential trials using
// graphical approaches", Stat. Biopharm. Res. 5(4):311–320).
func (lp *LookPlan) levels(conf float64) SegmentLevels {
	if lp == nil {
		return FixedLevels(conf)
	}
	a := lp.Alpha
	memo := map[int]float64{}
	pass := 0.0
	if !lp.Blocked {
		pass = 1 - normalCDF(lp.This.Boundary)
	}
	return SegmentLevels{Pass: pass, Fail: func(j, k int) float64 {
		d := k - j + 1
		if v, ok := memo[d]; ok {
			return v
		}
		v := lp.Level(a / float64(d))
		memo[d] = v
		return v
	}}
}

// Text says where the run stands, for the verdict and its advice: "look 2 of
// the plan of 2,004 cases (information fraction 0.50, O'Brien–Fleming-like
// spending): each side decides at z ≥ 2.96 (one-sided level 0.0015)".
func (lp LookPlan) Text() string {
	name := map[string]string{stats.SpendingOBrienFleming: "O'Brien–Fleming-like", stats.SpendingPocock: "Pocock-like"}[lp.Spending]
	s := fmt.Sprintf("look %d of a group-sequential plan of %d cases (information fraction %.2f, %s α-spending, Lan & DeMets 1983)",
		lp.This.Index, lp.MaxCases, lp.This.Fraction, name)
	if lp.Blocked {
		if lp.Final {
			return s + ": the plan's last look was already taken and its α is spent, so this run decides nothing; a new candidate version or set starts a new plan"
		}
		return s + fmt.Sprintf(": no more cases than look %d, so this look spends no α and decides nothing", lp.This.Index-1)
	}
	return s + fmt.Sprintf(": each side decides at z ≥ %.3f (one-sided level %.4g)", lp.This.Boundary, 1-normalCDF(lp.This.Boundary))
}

// EvaluateLook is Evaluate for a run that is look lp of its group-sequential
// plan (NextLook; nil: a fixed-n verdict, Evaluate). c must be computed at
// lp.This.Confidence: every gate then decides at the look's boundary. A
// blocked look (no more cases than the last) leaves every deciding gate
// INCONCLUSIVE.
func EvaluateLook(p Policy, c stats.Comparison, noise *stats.Paired, lp *LookPlan) Verdict {
	return evaluate(p, c, noise, lp, true)
}

// DecideLook is EvaluateLook without Verdict.Plan.
func DecideLook(p Policy, c stats.Comparison, noise *stats.Paired, lp *LookPlan) Verdict {
	return evaluate(p, c, noise, lp, false)
}

// blockGates turns the deciding gates (quality, cost, latency, segments)
// INCONCLUSIVE with the look's reason.
func blockGates(gates []Result, why string) {
	for i := range gates {
		switch g := gates[i].Gate; {
		case g == "quality", g == "cost", g == "latency", len(g) > 8 && g[:8] == "segment ":
			gates[i].Status = Inconclusive
			gates[i].Reason = why + " (" + gates[i].Reason + ")"
		}
	}
}

// LookAdvice is the advice of a run inside a plan: how many more cases of
// the same set and candidate version take the next look, and at which
// information fraction. more ≤ 0 or a final look say so.
func (lp LookPlan) LookAdvice(more int, perDay float64) string {
	switch {
	case lp.Blocked && lp.Final:
		return "the plan's last look was taken: its α is spent, more cases of this set and candidate version decide nothing"
	case lp.Final || more <= 0:
		return fmt.Sprintf("look %d was the plan's last (information fraction %.2f)", lp.This.Index, lp.This.Fraction)
	}
	return fmt.Sprintf("%s on the same set and candidate version make look %d of the plan, at information fraction 1.00 (this run: look %d at %.2f)",
		Advice(more, perDay), lp.This.Index+1, lp.This.Index, lp.This.Fraction)
}

// CompareLook compares a candidate with the incumbent (stats.Compare over the
// paired observations) and places the run in its group-sequential plan,
// written once for suite runs (eval.Report.Analyze) and their simulation
// (eval/validity). A first comparison at the policy's confidence gives the
// paired cases and, for a first look without looks.max_cases, the plan's
// cases: PlanPolicy at PlanPower on the observed discordance, spreads and
// cost and latency ratios — the figures that set how many cases a decision
// needs, not the observed quality difference the verdict is about. Then the
// comparison the verdict is drawn from is recomputed with its deciding
// intervals at the look's level (stats.Options.DecisionConfidence). A
// withheld verdict (run errors) or a policy without looks gives a fixed-n
// comparison and no look; a blocked look a comparison at the policy's level.
func CompareLook(p Policy, inc, cand []stats.Obs, opts stats.Options, previous []Look, withheld bool, suiteRunID string) (stats.Comparison, *LookPlan, error) {
	if withheld || p.LookSpending() == SpendingNone {
		c, err := stats.Compare(inc, cand, opts)
		return c, nil, err
	}
	first := opts
	first.NoArmIntervals = true
	c0, err := stats.Compare(inc, cand, first)
	if err != nil {
		return stats.Comparison{}, nil, err
	}
	maxCases := 0
	if p.Looks != nil {
		maxCases = p.Looks.MaxCases
	}
	if maxCases == 0 && len(previous) == 0 {
		maxCases = PlannedCases(p, c0)
	}
	look, err := NextLook(p, previous, max(maxCases, 1), c0.Quality.N, suiteRunID)
	if err != nil {
		return stats.Comparison{}, nil, err
	}
	if look == nil || look.Blocked {
		c, err := stats.Compare(inc, cand, opts)
		return c, look, err
	}
	at := opts
	at.DecisionConfidence = look.This.Confidence
	c, err := stats.Compare(inc, cand, at)
	return c, look, err
}

// PlannedCases is the cases a plan started by comparison c gets: the whole
// policy's plan at PlanPower (the larger of its PASS and FAIL sizes, those it
// can reach), never fewer than c's paired cases.
func PlannedCases(p Policy, c stats.Comparison) int {
	n := c.Quality.N
	if pp, err := PlanPolicy(p, ModelOf(c), PlanPower, stats.ZFor(p.Confidence)); err == nil {
		n = max(n, pp.PassN, pp.FailN)
	}
	return n
}
