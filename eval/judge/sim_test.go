package judge_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/conductor-shadow/conductor-shadow/eval"
	"github.com/conductor-shadow/conductor-shadow/eval/gate"
	"github.com/conductor-shadow/conductor-shadow/eval/judge"
	"github.com/conductor-shadow/conductor-shadow/eval/judge/judgetest"
	"github.com/conductor-shadow/conductor-shadow/shadow"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// The judge simulations run whole suites through the product's own code
// path — eval.RunSuite with judge.Graders over a judgetest judge, on the
// embedded engine — and check what the verdict does with a judge that lies.

// simCases is the suite size of the simulations: at least 100 judged cases,
// above the default policy's min_n.
const simCases = 120

// simSet writes a regression set of n cases graded by grader (rubric cases
// on the 1..10 scale) and loads it.
func simSet(t *testing.T, n int, grader string) *eval.Set {
	t.Helper()
	var b strings.Builder
	for i := range n {
		line := map[string]any{"id": fmt.Sprintf("c%03d", i), "category": []string{"qa", "writing", "code"}[i%3],
			"input": fmt.Sprintf("Question %d: explain it.", i), "grader": grader}
		if grader == eval.GraderJudge {
			line["rubric_scale"] = []int{1, 10}
		}
		js, err := json.Marshal(line)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(js)
		b.WriteByte('\n')
	}
	path := filepath.Join(t.TempDir(), "sim-"+grader+".jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	set, err := eval.LoadSet(path)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// quality is a truth: the quality (1..10) of the incumbent's and the
// candidate's answer to the i-th case.
type quality func(i int) (inc, cand float64)

func caseIndex(id string) int {
	var i int
	fmt.Sscanf(id, "c%d", &i)
	return i
}

// truths of the position-bias simulation: the candidate better on 30% of the
// cases, equal, or worse on 30%.
var truths = map[string]quality{
	"better": func(i int) (float64, float64) {
		if i%10 < 3 {
			return 6, 8
		}
		return 7, 7
	},
	"equal": func(int) (float64, float64) { return 7, 7 },
	"worse": func(i int) (float64, float64) {
		if i%10 < 3 {
			return 8, 6
		}
		return 7, 7
	},
}

type simRun struct {
	judge     *judgetest.Judge
	truth     quality
	grader    string
	policy    *gate.Policy
	incModel  string // the model the incumbent's steps call
	candModel string
	// answers overrides the quality-marked answers (identical, padded).
	answers func(i int) (inc, cand string)
	n       int // cases, default simCases
}

// run runs one simulated suite and returns its report.
func (s simRun) run(t *testing.T, id string) *eval.Report {
	t.Helper()
	grader := s.grader
	if grader == "" {
		grader = eval.GraderPairwise
	}
	answers := s.answers
	if answers == nil {
		answers = func(i int) (string, string) {
			qi, qc := s.truth(i)
			return judgetest.Answer(fmt.Sprintf("c%03d", i), qi), judgetest.Answer(fmt.Sprintf("c%03d", i), qc)
		}
	}
	inc := &judgetest.Pipeline{PipelineName: "single:incumbent", Model: s.incModel, Answers: func(c string) string { a, _ := answers(caseIndex(c)); return a }}
	cand := &judgetest.Pipeline{PipelineName: "candidate", Model: s.candModel, Answers: func(c string) string { _, b := answers(caseIndex(c)); return b }}
	resolve, err := judge.Graders(s.judge, judge.Config{Worker: "judge", PassScore: 7, Canaries: eval.DefaultCanaries}, eval.NewDefaultCodeConfig())
	if err != nil {
		t.Fatal(err)
	}
	n := s.n
	if n == 0 {
		n = simCases
	}
	st := engine.Open(t)
	rep, err := eval.RunSuite(context.Background(), eval.SuiteStoresOf(store.NewRoles(st)), simSet(t, n, grader), inc, []shadow.Pipeline{cand},
		eval.SuiteOptions{SuiteRunID: id, Graders: resolve, Concurrency: 16, Policy: s.policy})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// gateRow returns the verdict's row of gate name.
func gateRow(v gate.Verdict, name string) (gate.Result, bool) {
	for _, r := range v.Gates {
		if r.Gate == name {
			return r, true
		}
	}
	return gate.Result{}, false
}

// Always-A, always-B and coin-flip judges, on 120 judged cases whatever the
// truth: never PASS, never FAIL — INCONCLUSIVE, naming the judge's position
// consistency.
func TestSimPositionBiasedJudgesAreInconclusive(t *testing.T) {
	judges := []struct {
		name string
		new  func() *judgetest.Judge
	}{
		{"always A", judgetest.AlwaysA},
		{"always B", judgetest.AlwaysB},
		{"random seed 1", func() *judgetest.Judge { return judgetest.Random(1) }},
		{"random seed 2", func() *judgetest.Judge { return judgetest.Random(2) }},
		{"random seed 3", func() *judgetest.Judge { return judgetest.Random(3) }},
	}
	pass, fail, runs := 0, 0, 0
	for _, jd := range judges {
		for _, truth := range []string{"better", "equal", "worse"} {
			t.Run(jd.name+"/"+truth, func(t *testing.T) {
				rep := simRun{judge: jd.new(), truth: truths[truth]}.run(t, "sim-bias-"+strings.ReplaceAll(jd.name, " ", "-")+"-"+truth)
				runs++
				switch rep.Verdict {
				case string(gate.Pass):
					pass++
				case string(gate.Fail):
					fail++
				}
				cc := rep.Comparisons[0]
				r, ok := gateRow(cc.Verdict, gate.GatePositionConsistency)
				if rep.Verdict != string(gate.Inconclusive) || !ok || r.Status != gate.Inconclusive || !strings.Contains(r.Reason, "position consistency") {
					t.Errorf("verdict %s, position-consistency row %+v", rep.Verdict, r)
				}
				jr := rep.Judging[0]
				if jr.Pairs == nil || jr.Pairs.Judged != simCases || jr.Pairs.Wins+jr.Pairs.Losses+jr.Pairs.Ties+jr.Pairs.Inconsistent+jr.Pairs.Errors != simCases {
					t.Errorf("pairs %+v", jr.Pairs)
				}
				if !strings.Contains(rep.Headline, "position consistency") || !strings.Contains(rep.Markdown(), "position consistency") {
					t.Errorf("headline %q does not name position consistency", rep.Headline)
				}
				t.Logf("%s, candidate %s: wins %d ties %d losses %d inconsistent %d errors %d, position consistency %.2f; canaries failed %d of %d; verdict %s",
					jd.name, truth, jr.Pairs.Wins, jr.Pairs.Ties, jr.Pairs.Losses, jr.Pairs.Inconsistent, jr.Pairs.Errors, jr.Pairs.PositionConsistency,
					countFailed(jr.Canaries), len(jr.Canaries), rep.Verdict)
			})
		}
	}
	t.Logf("position-biased and random judges: %d suite runs of %d judged cases, %d PASS, %d FAIL", runs, simCases, pass, fail)
	if pass != 0 || fail != 0 {
		t.Errorf("%d PASS and %d FAIL from judges that do not read the answers; want 0 and 0", pass, fail)
	}
}

func countFailed(cs []eval.CanaryResult) int {
	n := 0
	for _, c := range cs {
		if !c.Passed {
			n++
		}
	}
	return n
}

// An honest judge, the control: canaries pass, every order agrees, the
// candidate that is better on 30% of the cases PASSes and the one worse on
// 30% FAILs; the judge costs 2 calls per case and 12 for the canaries.
func TestSimHonestJudgeDecides(t *testing.T) {
	for truth, want := range map[string]gate.Status{"better": gate.Pass, "worse": gate.Fail} {
		t.Run(truth, func(t *testing.T) {
			j := judgetest.Honest()
			rep := simRun{judge: j, truth: truths[truth]}.run(t, "sim-honest-"+truth)
			jr := rep.Judging[0]
			if rep.Verdict != string(want) || jr.Unreliable || jr.Pairs.PositionConsistency != 1 || countFailed(jr.Canaries) != 0 || len(jr.Canaries) != 3*eval.DefaultCanaries {
				t.Errorf("verdict %s (want %s), judge %+v\n%s", rep.Verdict, want, jr, rep.Comparisons[0].Verdict.Markdown())
			}
			if calls := j.Calls(); calls != 2*simCases+2*3*eval.DefaultCanaries {
				t.Errorf("%d judge calls, want %d (two orders per case, 12 for the canaries)", calls, 2*simCases+12)
			}
			if jr.Usage.Calls != j.Calls() || jr.Usage.CostUSD < float64(j.Calls())*judgetest.CostPerCall-1e-9 {
				t.Errorf("judge usage %+v for %d calls", jr.Usage, j.Calls())
			}
		})
	}
}

// Identical answers give 100% ties with an honest judge, and with an
// always-A judge 100% inconsistent pairs: position bias never makes a win.
func TestSimIdenticalAnswers(t *testing.T) {
	same := func(i int) (string, string) { a := judgetest.Answer(fmt.Sprintf("c%03d", i), 7); return a, a }
	rep := simRun{judge: judgetest.Honest(), answers: same}.run(t, "sim-identical-honest")
	pc := rep.Judging[0].Pairs
	if pc.Ties != simCases || pc.Wins+pc.Losses+pc.Inconsistent+pc.Errors != 0 {
		t.Errorf("honest judge on identical answers: %+v, want %d ties", pc, simCases)
	}
	t.Logf("identical answers, honest judge: %d of %d ties (%.0f%%)", pc.Ties, simCases, 100*float64(pc.Ties)/simCases)
	rep = simRun{judge: judgetest.AlwaysA(), answers: same}.run(t, "sim-identical-always-a")
	pc = rep.Judging[0].Pairs
	if pc.Inconsistent != simCases || pc.Wins+pc.Losses != 0 || rep.Verdict != string(gate.Inconclusive) {
		t.Errorf("always-A judge on identical answers: %+v, verdict %s", pc, rep.Verdict)
	}
}

// A judge that prefers the longer answer, on pairs where the candidate's
// answer is the longer one and no better: every order agrees (position
// consistency 1) and the label swap agrees, but the padded canary catches it.
func TestSimLengthBiasedJudgeIsFlaggedByThePaddedCanary(t *testing.T) {
	answers := func(i int) (string, string) {
		a := judgetest.Answer(fmt.Sprintf("c%03d", i), 7)
		return a, a + " Let me restate that in more words, to be thorough and complete."
	}
	rep := simRun{judge: judgetest.Longer(), answers: answers}.run(t, "sim-longer")
	jr := rep.Judging[0]
	var padded, failedPadded int
	for _, c := range jr.Canaries {
		if c.Kind == eval.CanaryPadded {
			padded++
			if !c.Passed {
				failedPadded++
			}
		} else if !c.Passed {
			t.Errorf("canary %s failed: %s", c.Kind, c)
		}
	}
	r, _ := gateRow(rep.Comparisons[0].Verdict, gate.GateCanaries)
	if padded == 0 || failedPadded != padded || !jr.Unreliable || rep.Verdict != string(gate.Inconclusive) || r.Status != gate.Inconclusive ||
		!strings.Contains(r.Reason, "padded") || jr.Pairs.PositionConsistency != 1 {
		t.Errorf("length-biased judge: padded canaries failed %d of %d, verdict %s, canary row %+v, consistency %.2f", failedPadded, padded, rep.Verdict, r, jr.Pairs.PositionConsistency)
	}
	if !strings.Contains(rep.Markdown(), "| padded |") {
		t.Error("the report's canary table lacks the padded canary")
	}
}

// The label-swap canary catches a judge that picks a label, not an answer:
// "WINNER: A" under the labels Response 2 / Response 1 is no verdict.
func TestSimLabelSwapCanary(t *testing.T) {
	// Honest on A/B prompts, but always names the label "A" otherwise.
	j := judgetest.Honest()
	honest := j.Pair
	j.Pair = func(p judge.ShownPair, rng *rand.Rand) string {
		if p.Labels != eval.LabelsAB {
			return "WINNER: A"
		}
		return honest(p, rng)
	}
	rep := simRun{judge: j, truth: truths["better"]}.run(t, "sim-label")
	jr := rep.Judging[0]
	failed := map[string]int{}
	for _, c := range jr.Canaries {
		if !c.Passed {
			failed[c.Kind]++
		}
	}
	if failed[eval.CanaryLabelSwap] != eval.DefaultCanaries || failed[eval.CanaryIdentical]+failed[eval.CanaryPadded] != 0 || rep.Verdict != string(gate.Inconclusive) {
		t.Errorf("failed canaries %v, verdict %s", failed, rep.Verdict)
	}
}

// A judge that fails on the candidate's worst 20% of answers, on a candidate
// truly 14 points worse: the comparison of the cases it did judge would
// PASS (the worst answers are gone), the judge-error rule makes it
// INCONCLUSIVE — for rubric scores (per arm) and for pairs.
func TestSimJudgeErrorsOnTheWorstAnswers(t *testing.T) {
	// The incumbent scores 8 everywhere; the candidate 8, except 1 on every
	// fifth case: 0.2 × (0.8 − 0.1) = 14 points worse on the 0..1 scale.
	worse := func(i int) (float64, float64) {
		if i%5 == 0 {
			return 8, 1
		}
		return 8, 8
	}
	failWorst := func(answers ...string) bool {
		for _, a := range answers {
			if judgetest.Quality(a) <= 1 {
				return true
			}
		}
		return false
	}
	for _, grader := range []string{eval.GraderJudge, eval.GraderPairwise} {
		t.Run(grader, func(t *testing.T) {
			j := judgetest.Honest()
			j.Fail = failWorst
			// 150 cases: the 120 judged stay above the policy's min_n.
			const n = 150
			rep := simRun{judge: j, truth: worse, grader: grader, n: n}.run(t, "sim-errors-"+grader)
			cc := rep.Comparisons[0]
			r, ok := gateRow(cc.Verdict, gate.GateJudgeErrors)
			jr := rep.Judging[0]
			if rep.Verdict != string(gate.Inconclusive) || !ok || r.Status != gate.Inconclusive || jr.CandidateErrors.Errors != n/5 {
				t.Errorf("verdict %s, judge-errors row %+v, candidate errors %+v", rep.Verdict, r, jr.CandidateErrors)
			}
			if len(jr.ErrorCases) != n/5 {
				t.Errorf("%d error cases reported, want %d", len(jr.ErrorCases), n/5)
			}
			// Without the judge rules the cases judged would PASS.
			without := gate.Evaluate(*rep.Policy, cc.Comparison, nil)
			t.Logf("%s: candidate 14 points worse, judge fails on its worst 20%%: judge errors incumbent %d, candidate %d of %d; verdict %s (without the judge-error rule: %s)",
				grader, jr.IncumbentErrors.Errors, jr.CandidateErrors.Errors, n, rep.Verdict, without.Verdict)
			if grader == eval.GraderJudge && without.Verdict != gate.Pass {
				t.Errorf("the dropped-errors comparison gives %s, the measured defect was a PASS", without.Verdict)
			}
			md := rep.Markdown()
			for _, want := range []string{"judge_errors", "| case with a judge error | incumbent | candidate |", "judge errors"} {
				if !strings.Contains(md, want) {
					t.Errorf("report lacks %q", want)
				}
			}
		})
	}
}

// Judges that answer in JSON, bare or fenced, are read: no judge errors.
func TestSimJSONVerdictsAreRead(t *testing.T) {
	j := judgetest.Honest()
	honest := j.Pair
	j.Pair = func(p judge.ShownPair, rng *rand.Rand) string {
		w := strings.TrimPrefix(honest(p, rng), "WINNER: ")
		if strings.Contains(p.First, "c00") {
			return "```json\n{\"reason\": \"compared\", \"winner\": \"" + w + "\"}\n```"
		}
		return `{"winner":"` + w + `"}`
	}
	rep := simRun{judge: j, truth: truths["better"]}.run(t, "sim-json")
	pc := rep.Judging[0].Pairs
	if pc.Errors != 0 || pc.Wins != simCases*3/10 || rep.Verdict != string(gate.Pass) {
		t.Errorf(`{"winner":"A"} judge: %+v, verdict %s`, pc, rep.Verdict)
	}
}

// A judge of the incumbent's model family is warned about; a policy with
// judge.same_family: refuse makes the verdict INCONCLUSIVE.
func TestSimSameFamilyJudge(t *testing.T) {
	refuse := gate.NewDefaultPolicy()
	refuse.Judge = &gate.JudgePolicy{SameFamily: gate.SameFamilyRefuse}
	for _, pol := range []*gate.Policy{nil, &refuse} {
		j := judgetest.Honest()
		j.Model = "gpt-5-2025-08-07"
		rep := simRun{judge: j, truth: truths["better"], incModel: "gpt-5", candModel: "claude-sonnet-4-20250514", policy: pol}.run(t, fmt.Sprintf("sim-family-%v", pol != nil))
		r, _ := gateRow(rep.Comparisons[0].Verdict, gate.GateJudgeFamily)
		jr := rep.Judging[0]
		if jr.Family != "openai" || len(jr.SameFamily) != 1 || !strings.Contains(jr.SameFamily[0], "incumbent single:incumbent (gpt-5)") {
			t.Errorf("family %q, same family %v", jr.Family, jr.SameFamily)
		}
		switch {
		case pol == nil && (rep.Verdict != string(gate.Pass) || r.Status != gate.Pass || !strings.HasPrefix(r.Reason, "WARNING")):
			t.Errorf("warn: verdict %s, row %+v", rep.Verdict, r)
		case pol != nil && (rep.Verdict != string(gate.Inconclusive) || r.Status != gate.Inconclusive || !strings.Contains(r.Reason, "refuses")):
			t.Errorf("refuse: verdict %s, row %+v", rep.Verdict, r)
		}
		if !strings.Contains(rep.Markdown(), "**Warning:** the judge is of the same model family (openai)") {
			t.Error("the report does not warn")
		}
	}
}

// Rubric replies out of the set's scale or empty are judge errors, counted
// per arm and reported case by case.
func TestSimRubricOutOfScaleIsAJudgeError(t *testing.T) {
	j := judgetest.Honest()
	j.Rubric = func(answer string, lo, hi int) string {
		switch i := caseIndex(answer[strings.Index(answer, "c"):]); {
		case strings.Contains(answer, "q=3") && i%40 == 0:
			return "Rating: [[85]]"
		case strings.Contains(answer, "q=3") && i%40 == 1:
			return "Rating: [[]]"
		}
		return "SCORE: " + fmt.Sprint(int(judgetest.Quality(answer)))
	}
	truth := func(int) (float64, float64) { return 7, 3 }
	rep := simRun{judge: j, truth: truth, grader: eval.GraderJudge}.run(t, "sim-rubric-scale")
	jr := rep.Judging[0]
	if jr.CandidateErrors.Errors != 6 || jr.IncumbentErrors.Errors != 0 || !strings.Contains(jr.CandidateErrors.Example, "outside the set's rubric scale 1..10") {
		t.Errorf("errors: incumbent %+v, candidate %+v", jr.IncumbentErrors, jr.CandidateErrors)
	}
	var js struct {
		Judging []struct {
			CandidateErrors struct {
				Errors int `json:"errors"`
			} `json:"candidate_errors"`
		} `json:"judging"`
	}
	b, _ := rep.JSON()
	html, err := rep.HTML()
	if err != nil || json.Unmarshal(b, &js) != nil || len(js.Judging) != 1 || js.Judging[0].CandidateErrors.Errors != 6 || !strings.Contains(html, `data-testid="judge-errors"`) {
		t.Errorf("judge errors missing from the JSON (%s) or the HTML report (%v)", b[:0], err)
	}
}

// A rubric judge that scores longer answers higher is caught by the padded
// canary (its repeated copy of an answer must not score above it).
func TestSimLengthBiasedRubricJudge(t *testing.T) {
	j := judgetest.Honest()
	j.Rubric = func(answer string, lo, hi int) string {
		return "SCORE: " + fmt.Sprint(min(hi, int(judgetest.Quality(answer))+len(answer)/20))
	}
	rep := simRun{judge: j, truth: truths["equal"], grader: eval.GraderJudge}.run(t, "sim-rubric-longer")
	jr := rep.Judging[0]
	if len(jr.Canaries) != eval.DefaultCanaries || countFailed(jr.Canaries) != eval.DefaultCanaries || jr.Canaries[0].Kind != eval.CanaryPadded ||
		rep.Verdict != string(gate.Inconclusive) || !jr.Unreliable {
		t.Errorf("canaries %+v, verdict %s", jr.Canaries, rep.Verdict)
	}
}
