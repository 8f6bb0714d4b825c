package gate

import (
	"fmt"
	"strings"
)

// GateRunErrors is the name of the run-error gate (Result.Gate).
const GateRunErrors = "run_errors"

// RunErrors counts one side's runs that ended in status error: the worker
// pool refused or failed the call (circuit breaker open, retries exhausted,
// deadline) or the pipeline itself failed, so there is no answer to grade.
type RunErrors struct {
	Side     string // "incumbent" or "candidate"
	Pipeline string
	Failed   int    // runs with status error
	Total    int    // runs of this side in the suite
	Example  string // the first failed run's error, "" when unknown
}

// Share is Failed / Total (0 without runs).
func (e RunErrors) Share() float64 {
	if e.Total == 0 {
		return 0
	}
	return float64(e.Failed) / float64(e.Total)
}

// String is "incumbent gpt: 30 of 30 runs failed (circuit breaker open …)".
func (e RunErrors) String() string {
	s := fmt.Sprintf("%s %s: %d of %d runs failed", e.Side, e.Pipeline, e.Failed, e.Total)
	if e.Example != "" {
		s += " (" + e.Example + ")"
	}
	return s
}

// CheckRunErrors is the run-error rule, applied before any other gate: a
// verdict is not drawn from runs that failed for infrastructure reasons. When
// either side's share of runs in status error exceeds p.RunErrorShare()
// (default 10%), the result is INCONCLUSIVE and withheld is true: the
// comparison would weigh outages, not the pipelines (an incumbent whose 30
// runs all failed scores 0% accuracy and 0 s p95). Otherwise the result
// passes. Figure is the larger share (0..1), Threshold the policy's.
func CheckRunErrors(p Policy, sides ...RunErrors) (r Result, withheld bool) {
	r = Result{Gate: GateRunErrors, Threshold: p.RunErrorShare(), Status: Pass}
	var over, all []string
	for _, s := range sides {
		r.Figure = max(r.Figure, s.Share())
		all = append(all, fmt.Sprintf("%s %d of %d", s.Side, s.Failed, s.Total))
		if s.Failed > 0 && s.Share() > r.Threshold {
			over = append(over, s.String())
		}
	}
	if len(over) > 0 {
		r.Status = Inconclusive
		r.Reason = strings.Join(over, "; ") + fmt.Sprintf(": no verdict (more than %.0f%% of a side's runs failed)", 100*r.Threshold)
		return r, true
	}
	r.Reason = "runs failed: " + strings.Join(all, ", ") + fmt.Sprintf(" (≤ %.0f%% per side)", 100*r.Threshold)
	return r, false
}

// Withhold puts the run-error result first in v's gates; when withheld, the
// verdict is INCONCLUSIVE whatever the other gates said, with no claim and no
// sample-size plan (more cases do not cure an outage).
func (v *Verdict) Withhold(r Result, withheld bool) {
	v.Gates = append([]Result{r}, v.Gates...)
	if withheld {
		v.Verdict, v.Claim, v.Plan = Inconclusive, ClaimNone, nil
	}
}
