package eval

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/conductor-shadow/conductor-shadow/eval/gate"
	"github.com/conductor-shadow/conductor-shadow/shadow"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// DefaultCanaries is the number of canaries of each kind a suite run asks its
// LLM judge per candidate (SuiteOptions.Canaries): with pairwise cases 2 ×
// (identical, padded, label swap) × 2 orders = 12 judge calls; with rubric
// cases 2 padded canaries, 2 calls.
const DefaultCanaries = 2

// Canary kinds (store.Judgment.Canary, CanaryResult.Kind).
const (
	// CanaryIdentical: the incumbent's answer against itself; both orders
	// must say tie.
	CanaryIdentical = "identical"
	// CanaryPadded: the incumbent's answer against itself padded with its own
	// repeated content (PadAnswer), which says nothing more: the padded one
	// must not be preferred in either order (tie or loss); a rubric judge
	// must not score it above the original.
	CanaryPadded = "padded"
	// CanaryLabelSwap: a real pair the judge decided consistently, asked
	// again in the same positions with the labels named by other words in
	// the other order (LabelsSwapped): the outcome must be the same.
	CanaryLabelSwap = "label_swap"
)

// CanaryResult is one canary a suite run asked its judge.
type CanaryResult struct {
	Candidate string `json:"candidate"` // the comparison it checks the judge of
	Kind      string `json:"kind"`      // CanaryIdentical, CanaryPadded, CanaryLabelSwap
	CaseID    string `json:"case_id"`
	// Want is what the canary must give, Got what it gave: pairwise outcomes
	// from the candidate side ("tie"; "tie or loss"; the real pair's
	// outcome), or rubric values ("at most 0.8").
	Want   string     `json:"want"`
	Got    string     `json:"got"`
	Passed bool       `json:"passed"`
	Usage  JudgeUsage `json:"usage"`
	Error  string     `json:"error,omitempty"`
}

// String describes the canary: "padded (case gsm8k-12): want tie or loss, got win".
func (c CanaryResult) String() string {
	s := fmt.Sprintf("%s (case %s): want %s, got %s", c.Kind, c.CaseID, c.Want, c.Got)
	if c.Error != "" {
		s += " (" + clip(c.Error, 160) + ")"
	}
	return s
}

// stepModels returns the distinct models a run's steps called, sorted.
func stepModels(steps []store.Step) []string {
	var out []string
	for _, s := range steps {
		if s.Model != "" && !slices.Contains(out, s.Model) {
			out = append(out, s.Model)
		}
	}
	slices.Sort(out)
	return out
}

// pairResult is a run's pairwise outcome against the incumbent's run.
type pairResult struct {
	outcome, explanation, err string
	judgment                  *PairJudgment // nil when no judge was asked
}

// noAnswer says why a run has no answer to judge ("" when it has one): it
// failed without output, or its answer hit the token cap and the truncation
// rule is fail.
func noAnswer(r store.Run, rule string) string {
	switch {
	case r.FinalOutput == "" && r.Status != store.StatusOK:
		return fmt.Sprintf("run %s: %s", r.Status, clip(r.Error, 200))
	case r.Truncated && rule == gate.TruncationFail:
		return "answer truncated at the token cap (truncation: fail)"
	}
	return ""
}

// judgeRunPair judges cand's answer against inc's on c. A pair with a
// truncated answer under truncation "exclude" is PairExcluded; a pair
// DecideWithoutJudge decides needs no judge (failed runs count as losses,
// never vanish); otherwise pj judges the pair in both orders with LabelsAB.
func judgeRunPair(ctx context.Context, pj PairJudge, c Case, inc, cand store.Run, rule string) pairResult {
	if rule == gate.TruncationExclude && (inc.Truncated || cand.Truncated) {
		return pairResult{outcome: PairExcluded, explanation: "an answer was truncated at the token cap: the pair is left out (truncation: exclude); no judge asked"}
	}
	if outcome, why, ok := DecideWithoutJudge(inc, cand, rule); ok {
		return pairResult{outcome: outcome, explanation: why}
	}
	j := pj.JudgePair(ctx, c, inc.FinalOutput, cand.FinalOutput, LabelsAB)
	res := pairResult{outcome: j.Outcome, judgment: &j, explanation: DescribeJudgment(j)}
	if j.Outcome == store.JudgmentError {
		res.err = j.Error
	}
	return res
}

// DecideWithoutJudge is the pairwise outcome of a pair one of whose runs has
// no answer to judge (it failed, timed out or was cut by a budget without
// output, or its answer hit the token cap under truncation rule "fail"):
// the candidate without one loses, the incumbent without one loses (a win
// for the candidate), both without one tie. ok is false when both have an
// answer: then the judge must be asked. Suite runs and live judging decide
// such pairs the same way; why says it in one line ("loss: the candidate has
// no answer (run error: …); no judge asked").
func DecideWithoutJudge(inc, cand store.Run, rule string) (outcome, why string, ok bool) {
	ni, nc := noAnswer(inc, rule), noAnswer(cand, rule)
	switch {
	case ni != "" && nc != "":
		return store.JudgmentTie, fmt.Sprintf("tie: neither has an answer (incumbent %s; candidate %s); no judge asked", ni, nc), true
	case nc != "":
		return store.JudgmentLoss, fmt.Sprintf("loss: the candidate has no answer (%s); no judge asked", nc), true
	case ni != "":
		return store.JudgmentWin, fmt.Sprintf("win: the incumbent has no answer (%s); no judge asked", ni), true
	}
	return "", "", false
}

// PairValue is the score of a pairwise outcome from the candidate's side:
// win 1, tie or inconsistent 0.5, loss 0 (what the gate's paired test and
// the evaluation events of live judging use).
func PairValue(outcome string) float64 { return pairValue(outcome) }

// DescribeJudgment is a judgment in one line: "[judge gpt-5 (gpt-5-2025-08-07)
// prompt judge-pairwise-v2] win: incumbent shown first → candidate, candidate
// shown first → candidate".
func DescribeJudgment(j PairJudgment) string {
	side := func(o OrderVerdict) string {
		if o.Error != "" {
			return "error (" + clip(o.Error, 200) + ")"
		}
		return o.Verdict
	}
	return fmt.Sprintf("[judge %s prompt %s] %s: incumbent shown first → %s, candidate shown first → %s",
		j.Usage.JudgeName(), j.PromptVersion, j.Outcome, side(j.Orders[0]), side(j.Orders[1]))
}

// runCanaries asks the suite's LLM judge its canaries, per candidate (not
// the incumbent's A′ re-run): opts.Canaries of each
// kind, on cases drawn without replacement by a generator seeded from the
// suite run id, the pipeline and the kind, so a suite run's canaries are
// reproducible. Pairwise cases (a PairJudge) get identical, padded and
// label-swap canaries; cases graded by another LLM judge (their grades carry
// JudgeUsage) padded canaries. The judgments are stored (store.Judgment with
// Canary set). A failed store write or a cancelled ctx is an error.
func (r *suiteRunner) runCanaries(ctx context.Context, recs []*caseRecord) ([]CanaryResult, error) {
	var out []CanaryResult
	var rows []store.Judgment
	for p := 1; p < len(r.pipelines); p++ {
		if isIncumbent(p, r.pipelines[p]) {
			continue // the incumbent's A′ re-run is no candidate: its judge is checked per candidate
		}
		name := r.pipelines[p].Name()
		var pairs, rubric, consistent []*caseRecord
		for _, rec := range recs {
			if rec == nil || len(rec.runs) <= p {
				continue
			}
			inc, o := rec.runs[0], rec.outcomes[p]
			hasAnswer := inc.FinalOutput != "" && inc.Status == store.StatusOK
			switch {
			case o.Pairwise != "" && hasAnswer:
				pairs = append(pairs, rec)
				if o.Judge != nil && (o.Pairwise == store.JudgmentWin || o.Pairwise == store.JudgmentTie || o.Pairwise == store.JudgmentLoss) {
					consistent = append(consistent, rec)
				}
			case o.Pairwise == "" && rec.outcomes[0].Judge != nil && rec.outcomes[0].GraderError == "" && hasAnswer:
				rubric = append(rubric, rec)
			}
		}
		pick := func(kind string, from []*caseRecord) []*caseRecord {
			h := fnv.New64a()
			h.Write([]byte(r.row.SuiteRunID + "\x00" + name + "\x00" + kind))
			rng := rand.New(rand.NewPCG(h.Sum64(), 0xca11a7))
			idx := rng.Perm(len(from))
			var sel []*caseRecord
			for _, i := range idx[:min(r.opts.Canaries, len(idx))] {
				sel = append(sel, from[i])
			}
			return sel
		}
		pj, _ := r.judgeOf(pairs)
		for _, k := range []struct {
			kind string
			from []*caseRecord
		}{{CanaryIdentical, pairs}, {CanaryPadded, pairs}, {CanaryLabelSwap, consistent}} {
			if pj == nil {
				break
			}
			for _, rec := range pick(k.kind, k.from) {
				res, row := r.pairCanary(ctx, pj, k.kind, rec, p)
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				out, rows = append(out, res), append(rows, row)
			}
		}
		for _, rec := range pick(CanaryPadded, rubric) {
			res, row := r.rubricCanary(ctx, rec, p)
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			out, rows = append(out, res), append(rows, row)
		}
	}
	if len(rows) > 0 && r.judgments != nil {
		if err := r.judgments.InsertJudgments(ctx, rows); err != nil {
			return nil, fmt.Errorf("store canary judgments: %w", err)
		}
	}
	return out, nil
}

// judgeOf returns the pair judge of the first record's case.
func (r *suiteRunner) judgeOf(recs []*caseRecord) (PairJudge, bool) {
	if len(recs) == 0 {
		return nil, false
	}
	pj, ok := r.graders[recs[0].c.Grader].(PairJudge)
	return pj, ok
}

// pairCanary asks one pairwise canary of kind on rec for pipeline p.
func (r *suiteRunner) pairCanary(ctx context.Context, pj PairJudge, kind string, rec *caseRecord, p int) (CanaryResult, store.Judgment) {
	inc, cand := rec.runs[0], rec.runs[p]
	meta := JudgmentMeta{RequestID: r.row.SuiteRunID + "/" + rec.c.ID, SuiteRunID: r.row.SuiteRunID, CaseID: rec.c.ID,
		Pipeline: cand.Pipeline, PipelineVersion: cand.PipelineVersion, CandidateRun: inc.RunID,
		IncumbentPipeline: inc.Pipeline, IncumbentRun: inc.RunID, Canary: kind}
	res := CanaryResult{Candidate: cand.Pipeline, Kind: kind, CaseID: rec.c.ID}
	var j PairJudgment
	switch kind {
	case CanaryIdentical:
		j = pj.JudgePair(ctx, rec.c, inc.FinalOutput, inc.FinalOutput, LabelsAB)
		res.Want, res.Passed = store.JudgmentTie, j.Outcome == store.JudgmentTie
	case CanaryPadded:
		j = pj.JudgePair(ctx, rec.c, inc.FinalOutput, PadAnswer(inc.FinalOutput), LabelsAB)
		res.Want, res.Passed = "tie or loss (the padded answer is the candidate side)", j.Outcome == store.JudgmentTie || j.Outcome == store.JudgmentLoss
	case CanaryLabelSwap:
		meta.CandidateRun = cand.RunID
		j = pj.JudgePair(ctx, rec.c, inc.FinalOutput, cand.FinalOutput, LabelsSwapped)
		main := rec.outcomes[p].Pairwise
		res.Want, res.Passed = main+" (the pair's outcome with labels A/B)", j.Outcome == main
	}
	res.Got, res.Usage, res.Error = j.Outcome, j.Usage, j.Error
	meta.CanaryPassed = res.Passed
	return res, j.Record(meta)
}

// rubricCanary grades the incumbent's answer of rec padded with its own
// content with the case's (LLM judge) grader: it must not score above the
// answer itself. Its row (store.Judgment, canary padded) has the padded copy
// as the candidate side: outcome win when it scored above the answer, tie
// when equal, loss below, error when the judge failed; the grade's
// explanation is Raw1.
func (r *suiteRunner) rubricCanary(ctx context.Context, rec *caseRecord, p int) (CanaryResult, store.Judgment) {
	orig := rec.outcomes[0]
	inc, cand := rec.runs[0], rec.runs[p]
	g := r.graders[rec.c.Grader].Grade(ctx, rec.c, PadAnswer(inc.FinalOutput))
	res := CanaryResult{Candidate: cand.Pipeline, Kind: CanaryPadded, CaseID: rec.c.ID,
		Want: fmt.Sprintf("at most %.3g (the answer's own score)", orig.Value)}
	if g.Judge != nil {
		res.Usage = *g.Judge
	}
	j := PairJudgment{Usage: res.Usage, JudgedAt: time.Now().UTC(), Outcome: store.JudgmentError}
	j.Orders[0] = OrderVerdict{IncumbentFirst: true, Raw: g.Explanation}
	if g.Err != nil {
		res.Got, res.Error = "error", g.Err.Error()
		j.Error = res.Error
	} else {
		res.Got, res.Passed = fmt.Sprintf("%.3g", g.Value), g.Value <= orig.Value
		switch {
		case g.Value > orig.Value:
			j.Outcome = store.JudgmentWin
		case g.Value == orig.Value:
			j.Outcome = store.JudgmentTie
		default:
			j.Outcome = store.JudgmentLoss
		}
	}
	return res, j.Record(JudgmentMeta{RequestID: r.row.SuiteRunID + "/" + rec.c.ID, SuiteRunID: r.row.SuiteRunID, CaseID: rec.c.ID,
		Pipeline: cand.Pipeline, PipelineVersion: cand.PipelineVersion, CandidateRun: inc.RunID,
		IncumbentPipeline: inc.Pipeline, IncumbentRun: inc.RunID, Canary: CanaryPadded, CanaryPassed: res.Passed})
}

// JudgeReport is what a comparison's verdict rests on when a judge graded it:
// the judge, its pairwise record, the judge errors per arm, the canaries and
// the model families, and the judge rows of the gate table (gate.CheckJudge).
type JudgeReport struct {
	Candidate string `json:"candidate"`
	// Judge names the LLM judge ("worker (model)"), "" when no case was
	// graded by one (the report then covers grader errors only).
	Judge  string `json:"judge,omitempty"`
	Family string `json:"family,omitempty"` // the judge's model family, "" when unknown
	// Pairs counts the candidate's pairwise outcomes (nil without pairwise cases).
	Pairs *PairCounts `json:"pairs,omitempty"`
	// Incumbent and Candidate count each arm's cases its grader could not judge.
	IncumbentErrors gate.ArmErrors `json:"incumbent_errors"`
	CandidateErrors gate.ArmErrors `json:"candidate_errors"`
	IncumbentOnly   int            `json:"incumbent_only_errors"`
	CandidateOnly   int            `json:"candidate_only_errors"`
	// ErrorCases lists every case whose grade failed on either side: a pair
	// with an error on one side is reported, never dropped silently.
	ErrorCases []JudgeErrorCase `json:"error_cases,omitempty"`
	Canaries   []CanaryResult   `json:"canaries,omitempty"`
	// SameFamily names the pipelines whose models share the judge's family.
	SameFamily []string `json:"same_family,omitempty"`
	// Unreliable: a judge rule made the verdict INCONCLUSIVE; Reasons say which.
	Unreliable bool     `json:"unreliable"`
	Reasons    []string `json:"reasons,omitempty"`
	// Usage is every judge call of the comparison, canaries included.
	Usage JudgeUsage `json:"usage"`
	// HumanReview is a pairwise judge's agreement with human reviewers over
	// every pair of it they reviewed (earlier suite runs and live traffic),
	// overall, per set and per segment; nil before any review. Review is
	// the gate's human_review row: validated, below the floor, or not
	// validated by human review.
	HumanReview *JudgeAgreement `json:"human_review,omitempty"`
	Review      string          `json:"review,omitempty"`
}

// attachReview sets the judge's human-review figures from opts, on jr and
// on its gate evidence ev.
func (jr *JudgeReport) attachReview(ev *gate.JudgeEvidence, opts AnalysisOptions) {
	if opts.HumanReview == nil {
		ev.Review.Note = opts.ReviewNote
		return
	}
	a, ok := opts.HumanReview.Judge(jr.Usage.ID())
	if !ok {
		ev.Review.Note = "no pair of this judge was reviewed yet"
		return
	}
	jr.HumanReview = &a
	ev.Review = a.Evidence()
}

// JudgeErrorCase is a case whose grader could not judge one or both sides.
type JudgeErrorCase struct {
	CaseID    string `json:"case_id"`
	Incumbent string `json:"incumbent,omitempty"` // the incumbent's grader error, "" when it was graded
	Candidate string `json:"candidate,omitempty"` // the candidate's grader error (a pair's judgment error)
}

// judgeReport builds the judge evidence of candidate against the incumbent
// from the outcomes and canaries.
func (r *Report) judgeReport(candidate string) (JudgeReport, gate.JudgeEvidence) {
	jr := JudgeReport{Candidate: candidate,
		IncumbentErrors: gate.ArmErrors{Side: store.ModeIncumbent, Pipeline: r.Incumbent},
		CandidateErrors: gate.ArmErrors{Side: store.ModeCandidate, Pipeline: candidate}}
	inc := map[string]Outcome{}
	for _, o := range r.Outcomes {
		if o.Pipeline == r.Incumbent {
			inc[o.CaseID] = o
		}
	}
	var usage JudgeUsage
	pc := &PairCounts{}
	incFamilies, candFamilies := map[string][]string{}, map[string][]string{}
	for _, o := range r.Outcomes {
		if o.Pipeline != candidate {
			continue
		}
		io, ok := inc[o.CaseID]
		if !ok {
			continue
		}
		for _, m := range io.Models {
			incFamilies[shadow.ModelFamily(m)] = appendNew(incFamilies[shadow.ModelFamily(m)], m)
		}
		for _, m := range o.Models {
			candFamilies[shadow.ModelFamily(m)] = appendNew(candFamilies[shadow.ModelFamily(m)], m)
		}
		for _, u := range []*JudgeUsage{io.Judge, o.Judge} {
			if u != nil {
				usage = usage.Add(*u)
			}
		}
		ie, ce := io.GraderError, o.GraderError
		if o.Pairwise != "" {
			pc.add(o)
			if o.Pairwise == store.JudgmentError && ce == "" {
				ce = "judge error"
			}
			ie = ce // a pair's failed judgment leaves both arms unjudged
		}
		if o.Pairwise == PairExcluded {
			continue
		}
		jr.IncumbentErrors.Total++
		jr.CandidateErrors.Total++
		if ie != "" {
			jr.IncumbentErrors.Errors++
			if jr.IncumbentErrors.Example == "" {
				jr.IncumbentErrors.Example = clip(ie, 200)
			}
		}
		if ce != "" {
			jr.CandidateErrors.Errors++
			if jr.CandidateErrors.Example == "" {
				jr.CandidateErrors.Example = clip(ce, 200)
			}
		}
		switch {
		case ie != "" && ce == "":
			jr.IncumbentOnly++
		case ce != "" && ie == "":
			jr.CandidateOnly++
		}
		if ie != "" || ce != "" {
			ec := JudgeErrorCase{CaseID: o.CaseID, Incumbent: clip(ie, 300), Candidate: clip(ce, 300)}
			if o.Pairwise != "" {
				ec.Incumbent = "" // one judgment for the pair: reported on the candidate side
			}
			jr.ErrorCases = append(jr.ErrorCases, ec)
		}
	}
	if pc.Judged+pc.Decided+pc.Excluded > 0 {
		jr.Pairs = pc
	}
	ev := gate.JudgeEvidence{Pairwise: jr.Pairs != nil, Incumbent: jr.IncumbentErrors, Candidate: jr.CandidateErrors,
		IncumbentOnly: jr.IncumbentOnly, CandidateOnly: jr.CandidateOnly}
	for _, c := range r.Canaries {
		if c.Candidate != candidate {
			continue
		}
		jr.Canaries = append(jr.Canaries, c)
		usage = usage.Add(c.Usage)
		ev.Canaries++
		if !c.Passed {
			ev.CanaryFailures = append(ev.CanaryFailures, c.String())
		}
	}
	jr.Usage = usage
	if usage.Calls > 0 || usage.Model != "" || usage.Worker != "" {
		jr.Judge = usage.JudgeName()
		model := usage.Model
		if model == "" {
			model = usage.Worker
		}
		jr.Family = shadow.ModelFamily(model)
	}
	if jr.Family != "" {
		if ms := incFamilies[jr.Family]; len(ms) > 0 {
			jr.SameFamily = append(jr.SameFamily, fmt.Sprintf("the incumbent %s (%s)", r.Incumbent, strings.Join(ms, ", ")))
		}
		if ms := candFamilies[jr.Family]; len(ms) > 0 {
			jr.SameFamily = append(jr.SameFamily, fmt.Sprintf("the candidate %s (%s)", candidate, strings.Join(ms, ", ")))
		}
	}
	ev.Judge, ev.Family, ev.SameFamily = jr.Judge, jr.Family, jr.SameFamily
	if jr.Pairs != nil {
		ev.Judged, ev.Consistent = jr.Pairs.verdicts, jr.Pairs.consistent
	}
	return jr, ev
}

func appendNew(xs []string, x string) []string {
	if slices.Contains(xs, x) {
		return xs
	}
	return append(xs, x)
}

// judgingMarkdown renders the judge section of every comparison a judge graded.
func (r *Report) judgingMarkdown(b *strings.Builder) {
	if len(r.Judging) == 0 {
		return
	}
	b.WriteString("\n## Judging\n\n")
	b.WriteString("Pairwise cases are judged candidate against incumbent in both orders (incumbent shown first, then candidate first); a win or loss needs both orders to agree, orders that disagree are inconsistent (never a win), and the quality gate tests wins against losses (Tango's paired interval on P(win) − P(loss); ties and inconsistent pairs are concordant). Position consistency = judged pairs whose orders agree / judged pairs.\n\n")
	for _, jr := range r.Judging {
		fmt.Fprintf(b, "### Judge of %s vs %s\n\n", mdText(jr.Candidate), mdText(r.Incumbent))
		if jr.Judge != "" {
			fam := jr.Family
			if fam == "" {
				fam = "unknown"
			}
			fmt.Fprintf(b, "Judge %s, model family %s; %d judge calls, %d tokens in, %d out, %.4f USD.\n\n",
				mdCode(jr.Judge), mdText(fam), jr.Usage.Calls, jr.Usage.TokensIn, jr.Usage.TokensOut, jr.Usage.CostUSD)
		}
		if jr.Unreliable {
			fmt.Fprintf(b, "**The judge is not trusted for this verdict (INCONCLUSIVE):** %s\n\n", mdText(strings.Join(jr.Reasons, " | ")))
		}
		if len(jr.SameFamily) > 0 {
			fmt.Fprintf(b, "**Warning:** the judge is of the same model family (%s) as %s.\n\n", mdText(jr.Family), mdText(strings.Join(jr.SameFamily, "; ")))
		}
		if pc := jr.Pairs; pc != nil {
			b.WriteString("| judged | wins | ties | losses | inconsistent | judge errors | decided without the judge | excluded | position consistency |\n|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
			fmt.Fprintf(b, "| %d | %d | %d | %d | %d | %d | %d | %d | %.2f |\n\n", pc.Judged, pc.Wins, pc.Ties, pc.Losses, pc.Inconsistent, pc.Errors, pc.Decided, pc.Excluded, pc.PositionConsistency)
		}
		b.WriteString("| arm | pipeline | cases | judge errors | share |\n|---|---|--:|--:|--:|\n")
		for _, a := range []gate.ArmErrors{jr.IncumbentErrors, jr.CandidateErrors} {
			fmt.Fprintf(b, "| %s | %s | %d | %d | %s |\n", a.Side, mdText(a.Pipeline), a.Total, a.Errors, pct(a.Share()))
		}
		fmt.Fprintf(b, "\nCases with a judge error on one side only: incumbent %d, candidate %d (McNemar's exact test on error/no-error pairs decides whether the shares differ).\n", jr.IncumbentOnly, jr.CandidateOnly)
		if len(jr.Canaries) > 0 {
			b.WriteString("\n| canary | case | want | got | passed |\n|---|---|---|---|---|\n")
			for _, c := range jr.Canaries {
				got := c.Got
				if c.Error != "" {
					got += " (" + clip(c.Error, 120) + ")"
				}
				fmt.Fprintf(b, "| %s | %s | %s | %s | %s |\n", c.Kind, mdText(c.CaseID), mdText(c.Want), mdText(got), map[bool]string{true: "yes", false: "**no**"}[c.Passed])
			}
		}
		if len(jr.ErrorCases) > 0 {
			b.WriteString("\n| case with a judge error | incumbent | candidate |\n|---|---|---|\n")
			for _, e := range jr.ErrorCases {
				fmt.Fprintf(b, "| %s | %s | %s |\n", mdText(e.CaseID), mdText(orDash(e.Incumbent)), mdText(orDash(e.Candidate)))
			}
		}
		if jr.Review != "" {
			fmt.Fprintf(b, "\nHuman review: %s\n", mdText(jr.Review))
		}
		if a := jr.HumanReview; a != nil {
			b.WriteString("\nAgreement with human reviewers (labels weighted by 1/inclusion probability; κ's interval from the large-sample SE of Fleiss, Cohen & Everitt 1969):\n\n")
			b.WriteString("| scope | reviewed pairs | labels | raw agreement | Cohen's κ (CI) |\n|---|--:|--:|--:|---|\n")
			for _, f := range a.Rows() {
				fmt.Fprintf(b, "| %s | %d | %d | %s | %s |\n", mdText(f.Scope), f.Pairs, f.Reviews, pct(f.Agreement), mdText(f.KappaText()))
			}
		}
		b.WriteString("\n")
	}
}
