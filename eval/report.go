package eval

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/conductor-shadow/conductor-shadow/eval/gate"
	"github.com/conductor-shadow/conductor-shadow/eval/shift"
	"github.com/conductor-shadow/conductor-shadow/eval/stats"
	"github.com/conductor-shadow/conductor-shadow/store"
	"github.com/conductor-shadow/conductor-shadow/store/dataflow"
	"github.com/conductor-shadow/conductor-shadow/store/figure"
)

// Outcome is one pipeline's graded run on one case: the figures a report is
// computed from. LatencyMs, CostUSD, tokens and calls are copied from store.Run.
type Outcome struct {
	CaseID   string `json:"case_id"`
	Category string `json:"category"`
	Pipeline string `json:"pipeline"`
	Mode     string `json:"mode"` // store.ModeIncumbent or store.ModeCandidate
	RunID    string `json:"run_id"`
	Status   string `json:"status"` // the run's status
	// Error is the run's error when Status is store.StatusError (e.g. the
	// worker pool's "circuit breaker open"), "" otherwise.
	Error       string  `json:"error,omitempty"`
	LatencyMs   float64 `json:"latency_ms"`
	CostUSD     float64 `json:"cost_usd"`
	TokensIn    int64   `json:"tokens_in"`
	TokensOut   int64   `json:"tokens_out"`
	Calls       int     `json:"calls"`
	Simulated   bool    `json:"simulated"`
	Passed      bool    `json:"passed"`
	Value       float64 `json:"value"`        // 0..1
	GraderError string  `json:"grader_error"` // non-empty when the grader could not judge
	Explanation string  `json:"explanation"`
	// Truncated: the run's final answer was cut at the token cap (store.Run.Truncated).
	Truncated bool `json:"truncated,omitempty"`
	// Excluded: left out of accuracy and paired comparisons by the gate
	// policy's truncation rule "exclude".
	Excluded bool `json:"excluded,omitempty"`
	// InputReduced: the run answered without part of the case's input (a
	// media part none of its workers takes; store.Run.InputReduced).
	InputReduced bool     `json:"input_reduced,omitempty"`
	App          string   `json:"app,omitempty"`  // the case's "app" extra key, for segments
	Tags         []string `json:"tags,omitempty"` // the case's tags, for segments
	Grader       string   `json:"grader,omitempty"`
	// Segments are the case input's traffic segments (ingest/segment) as
	// "lang:ru", "table", "code", "len:128-511"; with the language and a
	// structure both known, also the pair "lang:ru+table" / "lang:ru+code".
	Segments []string `json:"segments,omitempty"`
	// Pairwise is set on cases graded pairwise: PairReference on the
	// incumbent's outcome (the answer the others are judged against, not
	// graded on its own); on every other pipeline's, the outcome of its
	// answer against the incumbent's: store.JudgmentWin, JudgmentTie,
	// JudgmentLoss, JudgmentInconsistent, JudgmentError, or PairExcluded.
	// Value is then 1 / 0.5 / 0 and Passed is a win.
	Pairwise string `json:"pairwise,omitempty"`
	// Judge is the LLM judge's calls for this outcome's grade or judgment
	// (nil when no judge was asked: another grader, or a pair decided by a
	// failed run).
	Judge *JudgeUsage `json:"judge,omitempty"`
	// Models are the distinct models the run's steps called (the workers'
	// model ids), for the judge's model-family check.
	Models []string `json:"models,omitempty"`
}

// PairExcluded is the pairwise outcome of a pair the gate policy's
// truncation rule "exclude" leaves out (an answer hit the token cap): no
// judge is asked.
const PairExcluded = "excluded"

// PairCounts are one pipeline's pairwise outcomes against the incumbent.
// Judged pairs are those the judge was asked about (errors included);
// Decided pairs were settled without it (a run without an answer loses, by
// the run-error and truncation rules); Excluded pairs were left out. Wins,
// Ties and Losses count judged and decided pairs alike; Inconsistent and
// Errors come from the judge only.
// PositionConsistency is store/figure's: (Wins + Ties + Losses of the judged)
// / (the same + Inconsistent). Reference counts the cases this pipeline was
// the answer judged against (the incumbent).
type PairCounts struct {
	Judged               int     `json:"judged"`
	Wins                 int     `json:"wins"`
	Ties                 int     `json:"ties"`
	Losses               int     `json:"losses"`
	Inconsistent         int     `json:"inconsistent"`
	Errors               int     `json:"errors"`
	Decided              int     `json:"decided"`
	Excluded             int     `json:"excluded"`
	Reference            int     `json:"reference"`
	PositionConsistency  float64 `json:"position_consistency"`
	consistent, verdicts int
}

// add counts one outcome.
func (pc *PairCounts) add(o Outcome) {
	switch {
	case o.Pairwise == PairReference:
		pc.Reference++
		return
	case o.Pairwise == PairExcluded:
		pc.Excluded++
		return
	case o.Judge == nil:
		pc.Decided++
	default:
		pc.Judged++
		if o.Pairwise != store.JudgmentError {
			pc.verdicts++
			if o.Pairwise != store.JudgmentInconsistent {
				pc.consistent++
			}
		}
	}
	switch o.Pairwise {
	case store.JudgmentWin:
		pc.Wins++
	case store.JudgmentTie:
		pc.Ties++
	case store.JudgmentLoss:
		pc.Losses++
	case store.JudgmentInconsistent:
		pc.Inconsistent++
	case store.JudgmentError:
		pc.Errors++
	}
	pc.PositionConsistency = figure.PositionConsistency(pc.consistent, pc.verdicts)
}

// ReportMeta identifies the suite run a report describes.
type ReportMeta struct {
	SuiteRunID string    `json:"suite_run_id"`
	SetName    string    `json:"set_name"`
	SetVersion string    `json:"set_version"` // hex sha256 of the set file
	Incumbent  string    `json:"incumbent"`   // pipeline name
	Candidates []string  `json:"candidates"`  // pipeline names, in the order given
	StartedAt  time.Time `json:"started_at"`  // UTC
	FinishedAt time.Time `json:"finished_at"` // UTC
	// LatencyScales are the factors the simulated worker pool scaled its
	// latencies by (e.g. ["0.2"]: 5× faster than the profiles), as its answers
	// reported them; empty when no answer was scaled or none said so.
	LatencyScales []string `json:"latency_scales,omitempty"`
	// Versions maps each pipeline name to its version (shadow.Pipeline's
	// Version): a candidate's version names its group-sequential plan.
	Versions map[string]string `json:"versions,omitempty"`
}

// LatencyNote says how the latencies of the report were scaled; "" when they
// were not (no scale reported, or only 1).
func (m ReportMeta) LatencyNote() string {
	var scaled []string
	for _, s := range m.LatencyScales {
		if s != "1" {
			scaled = append(scaled, "×"+s)
		}
	}
	if len(scaled) == 0 {
		return ""
	}
	return "Latencies are SCALED: the simulated worker pool ran with latency scale " + strings.Join(scaled, ", ") +
		" (SIMLLM latency scale; 1 = the profiles' realistic latency), so the latency figures and the p95 gate are scaled by that factor too."
}

// Stats are the figures of one pipeline over a group of runs.
//
// Accuracy is Passed / Graded, where Graded = N - GraderErrors - Excluded: a run
// whose grader failed is counted in GraderErrors, not as a wrong answer, and a
// truncated run the gate policy excludes (truncation: exclude) in Excluded.
// Truncated counts runs whose final answer was cut at the token cap, however
// the policy counts them (by default as failed). Errors counts
// runs whose status is not "ok" (they are graded like any other run; without an
// answer they fail). Accuracy, CostPerRequestUSD and the latency percentiles
// are store/figure's one definitions: Accuracy = figure.Accuracy(Passed,
// Graded); cost per request = total cost (USD) / distinct cases; p50/p95 (ms)
// are nearest rank over the runs with a known latency (0 = unknown, left out).
// Token and call means are over all N runs.
type Stats struct {
	N                 int     `json:"n"`
	Passed            int     `json:"passed"`
	Graded            int     `json:"graded"`
	Accuracy          float64 `json:"accuracy"` // 0..1
	CostPerRequestUSD float64 `json:"cost_per_request_usd"`
	TotalCostUSD      float64 `json:"total_cost_usd"`
	P50LatencyMs      float64 `json:"p50_latency_ms"`
	P95LatencyMs      float64 `json:"p95_latency_ms"`
	MeanTokensIn      float64 `json:"mean_tokens_in"`
	MeanTokensOut     float64 `json:"mean_tokens_out"`
	MeanCalls         float64 `json:"mean_calls"`
	Errors            int     `json:"errors"`
	GraderErrors      int     `json:"grader_errors"`
	Truncated         int     `json:"truncated"` // runs whose final answer hit the token cap
	Excluded          int     `json:"excluded"`  // truncated runs left out by the gate policy
	// InputReduced counts runs that answered without part of their input
	// (Outcome.InputReduced); graded like any other.
	InputReduced int  `json:"input_reduced,omitempty"`
	Simulated    bool `json:"simulated"` // any run came from the simulated worker pool
	// Pairwise counts the cases graded pairwise (not in Graded: a pair is
	// judged against the incumbent, see PairCounts); nil when there are none.
	Pairwise *PairCounts `json:"pairwise,omitempty"`
	// JudgeCostUSD is what the LLM judge's calls for this pipeline's grades
	// cost (USD; not in TotalCostUSD, which is the pipeline's own).
	JudgeCostUSD float64 `json:"judge_cost_usd,omitempty"`
}

// CategoryStats are one pipeline's Stats on one case category.
type CategoryStats struct {
	Category string `json:"category"`
	Stats
}

// PipelineReport is one pipeline's overall Stats and its Stats per category
// (sorted by category name).
type PipelineReport struct {
	Pipeline   string          `json:"pipeline"`
	Mode       string          `json:"mode"`
	Overall    Stats           `json:"overall"`
	Categories []CategoryStats `json:"categories"`
}

// Report is a suite run's result: per pipeline (incumbent first, then the
// candidates in order) overall and per-category figures, a one-line headline and
// every outcome.
type Report struct {
	ReportMeta
	Cases     int              `json:"cases"`     // distinct cases run
	Simulated bool             `json:"simulated"` // any run was simulated
	Headline  string           `json:"headline"`
	Pipelines []PipelineReport `json:"pipelines"`
	Outcomes  []Outcome        `json:"outcomes"` // case order, then pipeline order
	// Filled by Analyze: the gate policy used, per-candidate paired statistics
	// and verdicts, the incumbent's noise floor and the worst verdict.
	Policy      *gate.Policy          `json:"policy,omitempty"`
	Comparisons []CandidateComparison `json:"comparisons,omitempty"`
	Noise       *NoiseFloor           `json:"noise,omitempty"`
	Verdict     string                `json:"verdict,omitempty"`
	// Canaries are the checks of the LLM judge the suite run asked
	// (identical answers, a padded answer, the labels swapped), per candidate.
	Canaries []CanaryResult `json:"canaries,omitempty"`
	// Judging is, per candidate graded by an LLM judge (or with grader
	// errors), what its verdict rests on (filled by Analyze).
	Judging []JudgeReport `json:"judging,omitempty"`
	// Filled by ComparePrevious: regressions against earlier suite runs.
	Previous []PreviousRun `json:"previous,omitempty"`
	// Probes are the adversarial probe rates per pipeline (hijack, injection
	// obeyed, refusal agreement); empty when the set holds no probe.
	Probes []ProbeRates `json:"probes,omitempty"`
	// Shift compares the set's segment mix with live traffic (SuiteOptions.
	// ShiftWindow); ShiftError says why it is missing when it failed.
	Shift      *shift.Report `json:"shift,omitempty"`
	ShiftError string        `json:"shift_error,omitempty"`
	// Live is the live verdict of each candidate version as of the run's end
	// (LiveVerdicts: its one sequence since its shadowing started, not a
	// window); LiveError says why it is missing when it failed.
	Live      *LiveSection `json:"live,omitempty"`
	LiveError string       `json:"live_error,omitempty"`
	// DataFlows is the record of data flows of the same window: every party
	// outside the platform that received data (SuiteOptions.DataFlows);
	// DataFlowsError says why it is missing when it failed.
	DataFlows      *dataflow.Record `json:"data_flows,omitempty"`
	DataFlowsError string           `json:"data_flows_error,omitempty"`
}

// BuildReport computes a Report from outcomes. Pipelines named in meta come
// first in that order (incumbent, candidates); any other pipeline found in
// outcomes follows, sorted by name.
func BuildReport(meta ReportMeta, outcomes []Outcome) *Report {
	if meta.Candidates == nil {
		meta.Candidates = []string{}
	}
	if outcomes == nil {
		outcomes = []Outcome{}
	}
	r := &Report{ReportMeta: meta, Outcomes: outcomes, Pipelines: []PipelineReport{}}
	order := append([]string{meta.Incumbent}, meta.Candidates...)
	byPipe := map[string][]Outcome{}
	cases := map[string]bool{}
	var extra []string
	for _, o := range outcomes {
		if _, ok := byPipe[o.Pipeline]; !ok && !slices.Contains(order, o.Pipeline) {
			extra = append(extra, o.Pipeline)
		}
		byPipe[o.Pipeline] = append(byPipe[o.Pipeline], o)
		cases[o.CaseID] = true
		r.Simulated = r.Simulated || o.Simulated
	}
	slices.Sort(extra)
	r.Cases = len(cases)
	for _, name := range append(order, extra...) {
		runs := byPipe[name]
		if name == "" && len(runs) == 0 {
			continue
		}
		mode := store.ModeCandidate
		if name == meta.Incumbent {
			mode = store.ModeIncumbent
		}
		if len(runs) > 0 {
			mode = runs[0].Mode
		}
		pr := PipelineReport{Pipeline: name, Mode: mode, Overall: computeStats(runs), Categories: []CategoryStats{}}
		byCat := map[string][]Outcome{}
		var cats []string
		for _, o := range runs {
			if _, ok := byCat[o.Category]; !ok {
				cats = append(cats, o.Category)
			}
			byCat[o.Category] = append(byCat[o.Category], o)
		}
		slices.Sort(cats)
		for _, c := range cats {
			pr.Categories = append(pr.Categories, CategoryStats{Category: c, Stats: computeStats(byCat[c])})
		}
		r.Pipelines = append(r.Pipelines, pr)
	}
	r.Probes = r.probeRates()
	r.Headline = r.headline()
	return r
}

func computeStats(runs []Outcome) Stats {
	var s Stats
	s.N = len(runs)
	if s.N == 0 {
		return s
	}
	lat := make([]float64, 0, len(runs))
	var tin, tout, calls int64
	for _, o := range runs {
		if o.Truncated {
			s.Truncated++
		}
		if o.InputReduced {
			s.InputReduced++
		}
		if o.Judge != nil {
			s.JudgeCostUSD += o.Judge.CostUSD
		}
		switch {
		case o.Pairwise != "":
			if s.Pairwise == nil {
				s.Pairwise = &PairCounts{}
			}
			s.Pairwise.add(o)
		case o.GraderError != "":
			s.GraderErrors++
		case o.Excluded:
			s.Excluded++
		case o.Passed:
			s.Passed++
		}
		if o.Status != store.StatusOK {
			s.Errors++
		}
		s.TotalCostUSD += o.CostUSD
		tin += o.TokensIn
		tout += o.TokensOut
		calls += int64(o.Calls)
		lat = append(lat, o.LatencyMs)
		s.Simulated = s.Simulated || o.Simulated
	}
	s.Graded = s.N - s.GraderErrors - s.Excluded
	if s.Pairwise != nil {
		s.Graded -= s.Pairwise.Judged + s.Pairwise.Decided + s.Pairwise.Excluded + s.Pairwise.Reference
	}
	s.Accuracy = figure.Accuracy(s.Passed, s.Graded)
	n := float64(s.N)
	s.CostPerRequestUSD = costPerRequest(runs)
	s.MeanTokensIn = float64(tin) / n
	s.MeanTokensOut = float64(tout) / n
	s.MeanCalls = float64(calls) / n
	s.P50LatencyMs = figure.Latency(lat, 50)
	s.P95LatencyMs = figure.Latency(lat, 95)
	return s
}

// costPerRequest is figure.CostPerRequest over runs: their total cost (USD)
// over their distinct cases (a case is one request).
func costPerRequest(runs []Outcome) float64 {
	cases := map[string]bool{}
	total := 0.0
	for _, o := range runs {
		cases[o.CaseID] = true
		total += o.CostUSD
	}
	return figure.CostPerRequest(total, len(cases))
}

// NearestRank returns the p-th percentile (0 < p <= 100) of sorted values by the
// nearest-rank method: the value at 1-based rank ceil(p/100·n). 0 for no values.
// It is stats.NearestRank, kept here for the report's callers.
func NearestRank(sorted []float64, p float64) float64 { return stats.NearestRank(sorted, p) }

// headline is one line: set, case count, simulation, then per candidate its
// accuracy, cost per request and p95 latency against the incumbent's.
func (r *Report) headline() string {
	var b strings.Builder
	b.WriteString(r.headlinePrefix())
	if len(r.Pipelines) == 0 {
		b.WriteString("no runs")
		return b.String()
	}
	inc := r.Pipelines[0]
	if len(r.Pipelines) == 1 {
		fmt.Fprintf(&b, "%s %s accuracy; cost/request %s; p95 %s",
			inc.Pipeline, pct(inc.Overall.Accuracy), usd(inc.Overall.CostPerRequestUSD), secs(inc.Overall.P95LatencyMs))
		return b.String()
	}
	shown := 0
	for _, c := range r.Pipelines[1:] {
		if c.Mode == store.ModeIncumbent { // the incumbent's A′ re-run
			continue
		}
		if shown > 0 {
			b.WriteString(" | ")
		}
		shown++
		quality := fmt.Sprintf("%s %s vs %s %s accuracy", c.Pipeline, pct(c.Overall.Accuracy), inc.Pipeline, pct(inc.Overall.Accuracy))
		if pc := c.Overall.Pairwise; pc != nil && c.Overall.Graded == 0 {
			// Judged as pairs: no accuracy of their own, wins against losses.
			quality = fmt.Sprintf("%s vs %s judged pairwise: %d wins, %d losses, %d ties, %d inconsistent, %d judge errors (position consistency %.2f)",
				c.Pipeline, inc.Pipeline, pc.Wins, pc.Losses, pc.Ties, pc.Inconsistent, pc.Errors, pc.PositionConsistency)
		}
		fmt.Fprintf(&b, "%s; cost/request %s vs %s (%s); p95 %s vs %s",
			quality, usd(c.Overall.CostPerRequestUSD), usd(inc.Overall.CostPerRequestUSD),
			ratio(c.Overall.CostPerRequestUSD, inc.Overall.CostPerRequestUSD),
			secs(c.Overall.P95LatencyMs), secs(inc.Overall.P95LatencyMs))
	}
	return b.String()
}

// truncated counts runs of every pipeline whose final answer hit the token cap.
func (r *Report) truncated() int {
	n := 0
	for _, p := range r.Pipelines {
		n += p.Overall.Truncated
	}
	return n
}

// inputReduced counts runs of every pipeline that answered without part of
// their input.
func (r *Report) inputReduced() int {
	n := 0
	for _, p := range r.Pipelines {
		n += p.Overall.InputReduced
	}
	return n
}

// headlinePrefix is the headline's start: "set (N cases, SIMULATED workers,
// K grader errors, T truncated answers, R runs on reduced input): ".
func (r *Report) headlinePrefix() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%d cases", r.SetName, r.Cases)
	if r.Simulated {
		b.WriteString(", SIMULATED workers")
	}
	if ge := r.graderErrors(); ge > 0 {
		fmt.Fprintf(&b, ", %d grader errors", ge)
	}
	if tr := r.truncated(); tr > 0 {
		fmt.Fprintf(&b, ", %d truncated answers", tr)
	}
	if ir := r.inputReduced(); ir > 0 {
		fmt.Fprintf(&b, ", %d runs on reduced input", ir)
	}
	b.WriteString("): ")
	return b.String()
}

func (r *Report) graderErrors() int {
	n := 0
	for _, p := range r.Pipelines {
		n += p.Overall.GraderErrors
	}
	return n
}

func pct(f float64) string   { return fmt.Sprintf("%.1f%%", 100*f) }
func usd(f float64) string   { return fmt.Sprintf("$%.4f", f) }
func secs(ms float64) string { return fmt.Sprintf("%.1f s", ms/1000) }

func ratio(a, b float64) string {
	if b == 0 {
		return "n/a×"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

// Markdown renders the report: title, a SIMULATED banner when any run was
// simulated, the headline, the run's identity, an overall table (one row per
// pipeline) and a per-category table.
func (r *Report) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Suite run %s: %s\n\n", mdCode(r.SuiteRunID), mdText(r.SetName))
	if r.Simulated {
		b.WriteString("> **SIMULATED**: answers, latencies and costs come from the simulated worker pool, not from real models.\n\n")
	}
	if note := r.LatencyNote(); note != "" {
		b.WriteString("> " + mdText(note) + "\n\n")
	}
	fmt.Fprintf(&b, "**%s**\n\n", mdText(r.Headline))
	fmt.Fprintf(&b, "- Set: %s, version %s\n", mdCode(r.SetName), mdCode(shortHash(r.SetVersion)))
	fmt.Fprintf(&b, "- Cases: %d\n", r.Cases)
	cands := make([]string, len(r.Candidates))
	for i, c := range r.Candidates {
		cands[i] = mdCode(c)
	}
	if len(cands) == 0 {
		cands = []string{"none"}
	}
	fmt.Fprintf(&b, "- Incumbent: %s; candidates: %s\n", mdCode(r.Incumbent), strings.Join(cands, ", "))
	fmt.Fprintf(&b, "- Started %s, finished %s (%s)\n\n", mdTime(r.StartedAt), mdTime(r.FinishedAt),
		r.FinishedAt.Sub(r.StartedAt).Round(time.Millisecond))

	b.WriteString("## Overall\n\n")
	b.WriteString("| pipeline | mode | n | accuracy | passed/graded | cost/request (USD) | total cost (USD) | p50 latency (ms) | p95 latency (ms) | tokens in/request | tokens out/request | calls/request | run errors | truncated | grader errors | simulated |\n")
	b.WriteString("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|\n")
	for _, p := range r.Pipelines {
		s := p.Overall
		fmt.Fprintf(&b, "| %s | %s | %d | %s | %d/%d | %.6f | %.4f | %.0f | %.0f | %.1f | %.1f | %.2f | %d | %d | %d | %s |\n",
			mdText(p.Pipeline), p.Mode, s.N, pct(s.Accuracy), s.Passed, s.Graded, s.CostPerRequestUSD, s.TotalCostUSD,
			s.P50LatencyMs, s.P95LatencyMs, s.MeanTokensIn, s.MeanTokensOut, s.MeanCalls, s.Errors, s.Truncated, s.GraderErrors, yesNo(s.Simulated))
	}

	b.WriteString("\n## By category\n\n")
	b.WriteString("| category | pipeline | n | accuracy | passed/graded | cost/request (USD) | p50 latency (ms) | p95 latency (ms) | run errors | truncated | grader errors |\n")
	b.WriteString("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, cat := range r.categories() {
		for _, p := range r.Pipelines {
			for _, c := range p.Categories {
				if c.Category != cat {
					continue
				}
				s := c.Stats
				fmt.Fprintf(&b, "| %s | %s | %d | %s | %d/%d | %.6f | %.0f | %.0f | %d | %d | %d |\n",
					mdText(cat), mdText(p.Pipeline), s.N, pct(s.Accuracy), s.Passed, s.Graded,
					s.CostPerRequestUSD, s.P50LatencyMs, s.P95LatencyMs, s.Errors, s.Truncated, s.GraderErrors)
			}
		}
	}
	b.WriteString("\nAccuracy is passed / graded (runs whose grader failed are counted as grader errors, not as wrong). ")
	for _, p := range r.Pipelines {
		if p.Overall.Pairwise != nil {
			b.WriteString("Cases graded pairwise are not graded one by one (they are judged candidate against incumbent): their wins, ties, losses and position consistency are in the Judging section. ")
			break
		}
	}
	b.WriteString("Truncated runs gave a final answer cut at the token cap (finish reason length); the gate policy's truncation rule says how they count (default: as failed). ")
	b.WriteString("Latency percentiles use the nearest-rank method over runs. Costs are USD per request.\n")
	for _, p := range r.Pipelines {
		if n := p.Overall.InputReduced; n > 0 {
			fmt.Fprintf(&b, "\n- %s: %d of %d runs answered without part of their input (input reduced: a media part none of its workers takes); they are graded like the others.\n",
				mdText(p.Pipeline), n, p.Overall.N)
		}
	}
	r.probesMarkdown(&b)
	r.analysisMarkdown(&b)
	r.judgingMarkdown(&b)
	r.previousMarkdown(&b)
	if r.Shift != nil {
		b.WriteString(r.Shift.Markdown())
	} else if r.ShiftError != "" {
		fmt.Fprintf(&b, "\n## Shift\n\nThe shift section could not be computed: %s\n", mdText(r.ShiftError))
	}
	if r.Live != nil {
		b.WriteString(r.Live.Markdown())
	} else if r.LiveError != "" {
		fmt.Fprintf(&b, "\n## Live verdict\n\nThe live section could not be computed: %s\n", mdText(r.LiveError))
	}
	if r.DataFlows != nil {
		b.WriteString(r.DataFlows.Markdown())
	} else if r.DataFlowsError != "" {
		fmt.Fprintf(&b, "\n## Data flows and recipients\n\nThe data-flows section could not be computed: %s\n", mdText(r.DataFlowsError))
	}
	return b.String()
}

// categories returns every category in the report, sorted.
func (r *Report) categories() []string {
	var out []string
	for _, p := range r.Pipelines {
		for _, c := range p.Categories {
			if !slices.Contains(out, c.Category) {
				out = append(out, c.Category)
			}
		}
	}
	slices.Sort(out)
	return out
}

func yesNo(b bool) string {
	if b {
		return "SIMULATED"
	}
	return "no"
}

func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

func mdTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

var mdEscaper = strings.NewReplacer("|", `\|`, "\n", " ", "\r", " ")

func mdText(s string) string { return mdEscaper.Replace(s) }

func mdCode(s string) string {
	return "`" + strings.ReplaceAll(mdEscaper.Replace(s), "`", "'") + "`"
}

// JSON renders the report as indented JSON with snake_case field names (see the
// struct tags of Report, ReportMeta, PipelineReport, Stats and Outcome).
func (r *Report) JSON() ([]byte, error) {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("eval: report json: %w", err)
	}
	return b, nil
}

var unsafeFileChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// WriteReport writes r as <dir>/<suite run id>.md, <dir>/<suite run id>.json
// and <dir>/<suite run id>.html (r.HTML; characters other than letters, digits,
// ".", "_" and "-" in the id become "_"), creating dir if needed, and returns
// the Markdown and JSON paths (the HTML path is the Markdown path with ".html").
func WriteReport(dir string, r *Report) (mdPath, jsonPath string, err error) {
	if r == nil {
		return "", "", errors.New("eval: write report: nil report")
	}
	base := unsafeFileChars.ReplaceAllString(r.SuiteRunID, "_")
	if strings.Trim(base, "._") == "" {
		return "", "", fmt.Errorf("eval: write report: unusable suite run id %q", r.SuiteRunID)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", fmt.Errorf("eval: write report: %w", err)
	}
	js, err := r.JSON()
	if err != nil {
		return "", "", err
	}
	mdPath = filepath.Join(dir, base+".md")
	jsonPath = filepath.Join(dir, base+".json")
	if err := os.WriteFile(mdPath, []byte(r.Markdown()), 0o644); err != nil {
		return "", "", fmt.Errorf("eval: write report: %w", err)
	}
	if err := os.WriteFile(jsonPath, append(js, '\n'), 0o644); err != nil {
		return "", "", fmt.Errorf("eval: write report: %w", err)
	}
	page, err := r.HTML()
	if err != nil {
		return "", "", err
	}
	if err := os.WriteFile(filepath.Join(dir, base+".html"), []byte(page), 0o644); err != nil {
		return "", "", fmt.Errorf("eval: write report: %w", err)
	}
	return mdPath, jsonPath, nil
}
