package eval

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strings"

	"github.com/conductor-shadow/conductor-shadow/eval/gate"
	"github.com/conductor-shadow/conductor-shadow/eval/stats"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// CandidateComparison is one candidate against the incumbent on the cases both
// ran: the paired statistics (stats.Compare) and the gate verdict.
//
// Running is the sequential quality test (stats.Sequential with the policy's
// margin, FAIL threshold and effect, gate.SequentialConfig) replayed over the
// suite's paired cases in an order shuffled by RunningSeed (stored with the
// report): where an anytime-valid watch of this run would stand. A betting
// test needs its cases in random order, and sets are often sorted (mmlu-100
// by category). Advice is the plan's missing cases at the candidate's recent
// shadow-traffic rate: with looks (Verdict.Look) the cases that take the
// next look of its group-sequential plan (gate.LookPlan.LookAdvice), else
// gate.Advice. Version is the candidate's pipeline version, which names its
// plan with the set, the incumbent and the policy version.
type CandidateComparison struct {
	Candidate   string                 `json:"candidate"`
	Version     string                 `json:"version,omitempty"`
	Comparison  stats.Comparison       `json:"comparison"`
	Verdict     gate.Verdict           `json:"verdict"`
	Running     *stats.SequentialState `json:"running,omitempty"`
	RunningSeed uint64                 `json:"running_seed,omitempty"`
	Advice      string                 `json:"advice,omitempty"`
	// ShadowCasesPerDay is the candidate's shadowed production requests per
	// day over the window AnalysisOptions.ShadowCasesPerDay was measured on.
	ShadowCasesPerDay float64 `json:"shadow_cases_per_day"`
}

// NoiseFloor is the incumbent's second run (A′) against its first (A) on the
// same cases: how much the incumbent disagrees with itself.
type NoiseFloor struct {
	Pipeline string       `json:"pipeline"` // the A′ pipeline name
	Quality  stats.Paired `json:"quality"`  // A′ − A
}

// AnalysisOptions tune Analyze.
type AnalysisOptions struct {
	// Policy decides the verdicts; nil uses gate.NewDefaultPolicy().
	Policy *gate.Policy
	// Seed seeds the bootstraps; 0 derives one from the suite run id (FNV-64a)
	// so a report is reproducible from its id.
	Seed uint64
	// Resamples is the bootstrap resample count (default 2000).
	Resamples int
	// Rerun names the incumbent's A′ pipeline in the outcomes, "" for none.
	Rerun string
	// ShadowCasesPerDay maps a candidate to its shadowed production requests
	// per day (recent traffic): the days in the sample-size advice. Missing:
	// the advice gives cases only.
	ShadowCasesPerDay map[string]float64
	// HumanReview is the judges' agreement with human reviewers (AgreementOf
	// over every review): a pairwise judge's κ is checked against the
	// policy's judge.min_judge_kappa. Nil: no judge is validated by human
	// review, for the reason ReviewNote gives ("" for none yet).
	HumanReview *HumanReview
	ReviewNote  string
	// Looks maps a candidate to the earlier looks of its group-sequential
	// plan (the suite runs of this set, incumbent, candidate version and
	// policy version before this one, store.LookStore), in order; none: this
	// run is the plan's first look. Unused when the policy's looks are off.
	Looks map[string][]gate.Look
}

// Analyze fills r.Policy, r.Comparisons (one per candidate, in order),
// r.Judging (per candidate graded by an LLM judge or with grader errors: the
// judge's record, its canaries (r.Canaries) and the judge rows of the gate
// table, gate.CheckJudge, which make the verdict INCONCLUSIVE when the judge
// fails them), r.Noise
// (when opts.Rerun names a pipeline with outcomes) and r.Verdict (the worst
// candidate verdict: FAIL over INCONCLUSIVE over PASS; "" without candidates).
// Cases are paired by case id; a case missing on either side is left out. A
// pairwise case (the candidate's Outcome.Pairwise) pairs as a win, a loss
// or a concordant tie, so the quality test is on P(win) − P(loss).
// Segments are "category:<c>", "app:<a>" (when the case has one),
// "tag:<t>" and the traffic segments of the case's prompt (SegmentNames:
// "lang:ru", "table", "lang:ru+table", "len:128-511", ...); the segment
// p-values are Holm-corrected over all of them. It returns an error only for an invalid policy.
func (r *Report) Analyze(opts AnalysisOptions) error {
	p := gate.NewDefaultPolicy()
	if opts.Policy != nil {
		p = *opts.Policy
	}
	if err := p.Validate(); err != nil {
		return fmt.Errorf("eval: analyze: %w", err)
	}
	seed := opts.Seed
	if seed == 0 {
		h := fnv.New64a()
		h.Write([]byte(r.SuiteRunID))
		seed = h.Sum64()
	}
	sopts := stats.Options{Seed: seed, Resamples: opts.Resamples, Confidence: p.Confidence}
	r.Policy = &p
	r.Comparisons = []CandidateComparison{}
	r.Judging = nil
	r.Noise = nil
	r.Verdict = ""

	var noise *stats.Paired
	if opts.Rerun != "" {
		inc, rer := r.paired(r.Incumbent, opts.Rerun)
		if len(inc) > 0 {
			c, err := stats.Compare(inc, rer, sopts)
			if err != nil {
				return fmt.Errorf("eval: analyze noise floor: %w", err)
			}
			r.Noise = &NoiseFloor{Pipeline: opts.Rerun, Quality: c.Quality}
			noise = &r.Noise.Quality
		}
	}
	rank := map[gate.Status]int{gate.Pass: 1, gate.Inconclusive: 2, gate.Fail: 3}
	var noVerdict []string
	for _, name := range r.Candidates {
		inc, cand := r.paired(r.Incumbent, name)
		if len(inc) == 0 {
			continue
		}
		errs := []gate.RunErrors{r.runErrors(store.ModeIncumbent, r.Incumbent), r.runErrors(store.ModeCandidate, name)}
		res, withheld := gate.CheckRunErrors(p, errs...)
		// The judge first: a verdict read from a judge that failed its checks
		// is no evidence either way (and takes no look of the plan).
		jr, ev := r.judgeReport(name)
		if ev.Pairwise && ev.Judge != "" {
			jr.attachReview(&ev, opts)
		}
		rows, judgeWithheld := gate.CheckJudge(p, ev)
		c, look, err := gate.CompareLook(p, inc, cand, sopts, opts.Looks[name], withheld || len(judgeWithheld) > 0, r.SuiteRunID)
		if err != nil {
			return fmt.Errorf("eval: analyze %s: %w", name, err)
		}
		v := gate.EvaluateLook(p, c, noise, look)
		v.WithholdForJudge(rows, judgeWithheld)
		for _, row := range rows {
			if row.Gate == gate.GateHumanReview {
				jr.Review = row.Reason
			}
		}
		if len(rows) > 0 {
			jr.Unreliable, jr.Reasons = len(judgeWithheld) > 0, judgeWithheld
			r.Judging = append(r.Judging, jr)
		}
		if withheld || errs[0].Failed+errs[1].Failed > 0 {
			v.Withhold(res, withheld)
		}
		if withheld {
			noVerdict = append(noVerdict, res.Reason)
		} else if len(judgeWithheld) > 0 {
			noVerdict = append(noVerdict, fmt.Sprintf("%s: %s", name, judgeWithheld[0]))
		}
		cc := CandidateComparison{Candidate: name, Version: r.Versions[name], Comparison: c, Verdict: v, ShadowCasesPerDay: opts.ShadowCasesPerDay[name]}
		if scfg, ok := gate.SequentialConfig(p, 1); ok && !withheld && len(judgeWithheld) == 0 {
			d, _ := stats.Differences(inc, cand)
			// The policy validated, so the config is valid; a failure leaves
			// the running verdict out rather than the report.
			if sq, err := stats.NewSequential(scfg); err == nil {
				cc.RunningSeed = seed ^ runningSeedSalt
				for _, i := range rand.New(rand.NewPCG(cc.RunningSeed, 0)).Perm(len(d)) {
					sq.Add(d[i])
				}
				st := sq.State()
				cc.Running = &st
			}
		}
		switch {
		case v.Plan != nil && v.Look != nil:
			cc.Advice = v.Look.LookAdvice(v.Plan.MoreCases, cc.ShadowCasesPerDay)
		case v.Plan != nil:
			cc.Advice = gate.Advice(v.Plan.MoreCases, cc.ShadowCasesPerDay)
		}
		r.Comparisons = append(r.Comparisons, cc)
		if rank[v.Verdict] > rank[gate.Status(r.Verdict)] {
			r.Verdict = string(v.Verdict)
		}
	}
	if len(noVerdict) > 0 {
		// A verdict withheld for run errors: the headline says so instead of
		// comparing figures of failed runs (0% accuracy, 0 s p95).
		r.Headline = r.headlinePrefix() + strings.Join(noVerdict, " | ")
	}
	return nil
}

// runningSeedSalt derives the running verdict's shuffle seed from the
// report's bootstrap seed.
const runningSeedSalt = 0x5e9_0e7

// runErrors counts the runs of pipeline that ended in status error, with the
// first one's error as the example (gate.CheckRunErrors).
func (r *Report) runErrors(side, pipeline string) gate.RunErrors {
	e := gate.RunErrors{Side: side, Pipeline: pipeline}
	for _, o := range r.Outcomes {
		if o.Pipeline != pipeline {
			continue
		}
		e.Total++
		if o.Status == store.StatusError {
			e.Failed++
			if e.Example == "" {
				e.Example = o.Error
			}
		}
	}
	return e
}

// paired returns the observations of pipelines a and b on the cases both ran,
// in a's outcome order.
func (r *Report) paired(a, b string) (as, bs []stats.Obs) {
	other := map[string]Outcome{}
	for _, o := range r.Outcomes {
		if o.Pipeline == b {
			other[o.CaseID] = o
		}
	}
	for _, o := range r.Outcomes {
		if o.Pipeline != a {
			continue
		}
		ob, ok := other[o.CaseID]
		if !ok {
			continue
		}
		ia, ib := obsOf(o, true), obsOf(ob, false)
		if ob.Pairwise != "" {
			// A pairwise case is one judgment of b's answer against a's:
			// a win is a pair only b passed, a loss one only a passed, a tie
			// or an inconsistent pair passes neither (concordant), so the
			// paired test is on P(win) − P(loss).
			judged := ob.Pairwise != store.JudgmentError && ob.Pairwise != PairExcluded
			ia.Graded, ib.Graded = judged, judged
			ia.Passed, ib.Passed = judged && ob.Pairwise == store.JudgmentLoss, judged && ob.Pairwise == store.JudgmentWin
			ia.Score, ib.Score = 0, 0
			if ia.Passed {
				ia.Score = 1
			}
			if ib.Passed {
				ib.Score = 1
			}
		}
		as = append(as, ia)
		bs = append(bs, ib)
	}
	return as, bs
}

func obsOf(o Outcome, segments bool) stats.Obs {
	ob := stats.Obs{
		Graded: o.GraderError == "" && !o.Excluded, Passed: o.Passed && o.GraderError == "" && !o.Excluded, Score: o.Value, CostUSD: o.CostUSD,
		LatencyMs: o.LatencyMs, TokensIn: o.TokensIn, TokensOut: o.TokensOut, Calls: o.Calls,
	}
	if segments {
		ob.Segments = append(ob.Segments, "category:"+o.Category)
		if o.App != "" {
			ob.Segments = append(ob.Segments, "app:"+o.App)
		}
		for _, t := range o.Tags {
			ob.Segments = append(ob.Segments, "tag:"+t)
		}
		ob.Segments = append(ob.Segments, o.Segments...)
	}
	return ob
}

// analysisMarkdown renders the verdicts, the paired statistics per candidate,
// the noise floor and the segment table.
func (r *Report) analysisMarkdown(b *strings.Builder) {
	if r.Policy == nil {
		return
	}
	fmt.Fprintf(b, "\n## Verdict: %s\n\n", orDash(r.Verdict))
	fmt.Fprintf(b, "Gate policy version %s.\n\n", mdCode(r.Policy.Version))
	if r.Noise != nil {
		q := r.Noise.Quality
		fmt.Fprintf(b, "Noise floor: the incumbent re-run (%s) disagrees with itself on %d of %d cases (%.1f%%); A′ − A %s, 95%% CI %s, McNemar p %.4g.\n\n",
			mdCode(r.Noise.Pipeline), q.IncumbentOnly+q.CandidateOnly, q.N, 100*q.DiscordantRate, signedPts(q.Diff), ptsInterval(q.DiffCI), q.McNemarP)
	}
	for _, cc := range r.Comparisons {
		c := cc.Comparison
		fmt.Fprintf(b, "### %s vs %s\n\n", mdText(cc.Candidate), mdText(r.Incumbent))
		b.WriteString(cc.Verdict.Markdown())
		q := c.Quality
		fmt.Fprintf(b, "\n| figure | incumbent | candidate | candidate vs incumbent |\n|---|--:|--:|--:|\n")
		fmt.Fprintf(b, "| accuracy (Wilson %.0f%% CI; difference at %s) | %s %s | %s %s | %s, McNemar exact p %.4g (b=%d, c=%d) |\n",
			100*c.Confidence, levelPct(c.DecisionConfidence), pct(c.Incumbent.Accuracy), ptsInterval(c.Incumbent.AccuracyCI), pct(c.Candidate.Accuracy), ptsInterval(c.Candidate.AccuracyCI),
			diffWithCI(q.Method, q.Diff, q.DiffCI), q.McNemarP, q.IncumbentOnly, q.CandidateOnly)
		fmt.Fprintf(b, "| cost/request (USD) | %.6f | %.6f | ratio %.3f [%.3f, %.3f] |\n",
			c.Incumbent.CostPerRequestUSD, c.Candidate.CostPerRequestUSD, c.CostRatio, c.CostRatioCI.Low, c.CostRatioCI.High)
		fmt.Fprintf(b, "| total cost (USD) | %.4f | %.4f | |\n", c.Incumbent.TotalCostUSD, c.Candidate.TotalCostUSD)
		for _, l := range []struct {
			name     string
			a, b     float64
			aci, bci stats.Interval
		}{
			{"p50", c.Incumbent.P50LatencyMs, c.Candidate.P50LatencyMs, c.Incumbent.P50LatencyCI, c.Candidate.P50LatencyCI},
			{"p95", c.Incumbent.P95LatencyMs, c.Candidate.P95LatencyMs, c.Incumbent.P95LatencyCI, c.Candidate.P95LatencyCI},
			{"p99", c.Incumbent.P99LatencyMs, c.Candidate.P99LatencyMs, c.Incumbent.P99LatencyCI, c.Candidate.P99LatencyCI},
		} {
			extra := ""
			if l.name == "p95" {
				extra = fmt.Sprintf("ratio %.3f [%.3f, %.3f]", c.P95Ratio, c.P95RatioCI.Low, c.P95RatioCI.High)
			}
			fmt.Fprintf(b, "| %s latency (ms) | %.0f [%.0f, %.0f] | %.0f [%.0f, %.0f] | %s |\n",
				l.name, l.a, l.aci.Low, l.aci.High, l.b, l.bci.Low, l.bci.High, extra)
		}
		fmt.Fprintf(b, "| tokens in/out per request | %.1f / %.1f | %.1f / %.1f | |\n",
			c.Incumbent.MeanTokensIn, c.Incumbent.MeanTokensOut, c.Candidate.MeanTokensIn, c.Candidate.MeanTokensOut)
		fmt.Fprintf(b, "| calls per request | %.2f | %.2f | |\n", c.Incumbent.MeanCalls, c.Candidate.MeanCalls)
		if cc.Advice != "" {
			fmt.Fprintf(b, "\nAdvice: %s.\n", mdText(cc.Advice))
		}
		if cc.Running != nil {
			fmt.Fprintf(b, "\nSequential (anytime-valid betting test with adaptive bets, Waudby-Smith & Ramdas 2024, over the cases shuffled by seed %d): %s.\n", cc.RunningSeed, mdText(gate.RunningVerdictIn(c.Quality.Method, *cc.Running)))
		}
		if len(c.Segments) > 0 {
			fmt.Fprintf(b, "\n| segment | n | incumbent | candidate | diff (%s CI) | McNemar p | adjusted p |\n|---|--:|--:|--:|--:|--:|--:|\n", levelPct(c.DecisionConfidence))
			for _, s := range c.Segments {
				fmt.Fprintf(b, "| %s | %d | %s | %s | %s | %.4g | %.4g |\n", mdText(s.Name), s.Quality.N,
					pct(s.Incumbent.Accuracy), pct(s.Candidate.Accuracy), diffWithCI(s.Quality.Method, s.Quality.Diff, s.Quality.DiffCI), s.Quality.McNemarP, s.AdjustedP)
			}
			fmt.Fprintf(b, "\nSegment p-values are corrected for multiple comparisons: %s.\n", c.Correction)
			if worse, better := SignificantSegments(c); len(worse)+len(better) > 0 {
				if len(worse) > 0 {
					fmt.Fprintf(b, "\nThe candidate is worse on %s.\n", mdText(strings.Join(worse, "; ")))
				}
				if len(better) > 0 {
					fmt.Fprintf(b, "\nThe candidate is better on %s.\n", mdText(strings.Join(better, "; ")))
				}
			}
			b.WriteString("\n")
		}
	}
}

// SignificantSegments describes the segments whose Holm-adjusted McNemar
// p-value is at most 1 − confidence, split by the sign of the candidate −
// incumbent accuracy difference, as plain text:
// "lang:ru+table (-40.0 pts, adjusted p 0.012, n 25)".
func SignificantSegments(c stats.Comparison) (worse, better []string) {
	alpha := 1 - c.Confidence
	for _, s := range c.Segments {
		if s.AdjustedP > alpha || s.Quality.Diff == 0 {
			continue
		}
		d := fmt.Sprintf("%s (%s, adjusted p %.3g, n %d)", s.Name, signedPts(s.Quality.Diff), s.AdjustedP, s.Quality.N)
		if s.Quality.Diff < 0 {
			worse = append(worse, d)
		} else {
			better = append(better, d)
		}
	}
	return worse, better
}

// levelPct names a two-sided level: "95%", "99.85%" at a look (0: "-").
func levelPct(conf float64) string {
	if conf <= 0 {
		return "-"
	}
	return gate.LevelText(conf)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// diffWithCI renders a paired difference with its interval in the unit of
// its test: "+1.3 pts [-2.0, 4.6]" (accuracy points) or "-0.12 points on
// 1–10 [-0.40, 0.16]" (judge scores).
func diffWithCI(method string, d float64, iv stats.Interval) string {
	if gate.ScoreUnits(method) {
		return fmt.Sprintf("%s [%.2f, %.2f]", gate.DiffText(method, d), gate.JudgeScale*iv.Low, gate.JudgeScale*iv.High)
	}
	return signedPts(d) + " " + ptsInterval(iv)
}

func signedPts(f float64) string { return fmt.Sprintf("%+.1f pts", 100*f) }

func ptsInterval(iv stats.Interval) string {
	return fmt.Sprintf("[%.1f, %.1f]", 100*iv.Low, 100*iv.High)
}
