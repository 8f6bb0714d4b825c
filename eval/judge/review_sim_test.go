package judge_test

import (
	"context"
	"fmt"
	"hash/fnv"
	"strings"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/eval"
	"github.com/conductor-shadow/conductor-shadow/eval/gate"
	"github.com/conductor-shadow/conductor-shadow/eval/judge"
	"github.com/conductor-shadow/conductor-shadow/eval/judge/judgetest"
	"github.com/conductor-shadow/conductor-shadow/shadow"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// reviewCases is the suite size of the human-review simulation: its review
// sample at the default share (store.DefaultReviewShare) is about 60 pairs,
// above the default judge.min_reviews.
const reviewCases = 300

// reviewTruth is the quality of each side on case i: the candidate better
// on half the cases, worse on 30%, as good (in other words) on 20%.
func reviewTruth(i int) (inc, cand float64) {
	switch i % 10 {
	case 0, 1, 2, 3, 4:
		return 6, 8
	case 5, 6, 7:
		return 8, 6
	}
	return 7, 7
}

// reviewAnswers are quality-marked answers; on equal quality the candidate
// says it in other words, so the two answers are never the same text.
func reviewAnswers(i int) (inc, cand string) {
	qi, qc := reviewTruth(i)
	id := fmt.Sprintf("c%03d", i)
	inc, cand = judgetest.Answer(id, qi), judgetest.Answer(id, qc)
	if qi == qc {
		cand = strings.TrimSuffix(cand, ".") + ", put another way."
	}
	return inc, cand
}

// reviewSuite runs one suite of reviewCases pairwise cases with judge j on
// st, under the default policy.
func reviewSuite(t *testing.T, st store.Store, j *judgetest.Judge, id string) *eval.Report {
	t.Helper()
	inc := &judgetest.Pipeline{PipelineName: "single:incumbent", Answers: func(c string) string { a, _ := reviewAnswers(caseIndex(c)); return a }}
	cand := &judgetest.Pipeline{PipelineName: "candidate", Answers: func(c string) string { _, b := reviewAnswers(caseIndex(c)); return b }}
	resolve, err := judge.Graders(j, judge.Config{Worker: "judge", PassScore: 7, Canaries: eval.DefaultCanaries}, eval.NewDefaultCodeConfig())
	if err != nil {
		t.Fatal(err)
	}
	rep, err := eval.RunSuite(context.Background(), eval.SuiteStoresOf(store.NewRoles(st)), simSet(t, reviewCases, eval.GraderPairwise), inc,
		[]shadow.Pipeline{cand}, eval.SuiteOptions{SuiteRunID: id, Graders: resolve, Concurrency: 16})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// reviewAll has a simulated reviewer label every pair of the review sample
// at the default share, through the review page's store path: the queue
// (store.ReviewReader.ReviewQueue), a shuffled order per pair, the key the
// reviewer presses for the answer of higher quality (T on equal quality),
// the label the shuffle maps it to (store.ReviewLabel) and AddReview. It
// returns how many pairs were labelled.
func reviewAll(t *testing.T, st store.Store, reviewer string) int {
	t.Helper()
	ctx := context.Background()
	roles := store.NewRoles(st)
	n := 0
	for {
		q, err := roles.ReviewReader.ReviewQueue(ctx, store.ReviewQueueQuery{Reviewer: reviewer, Share: store.DefaultReviewShare, Limit: store.MaxReviewQueueLimit})
		if err != nil {
			t.Fatal(err)
		}
		if len(q.Pairs) == 0 {
			return n
		}
		for _, p := range q.Pairs {
			h := fnv.New64a()
			h.Write([]byte(reviewer + p.RequestID))
			shown, a, b := store.VerdictIncumbent, p.IncumbentAnswer, p.CandidateAnswer
			if h.Sum64()&1 == 1 {
				shown, a, b = store.VerdictCandidate, b, a
			}
			choice := store.ChoiceTie
			switch qa, qb := judgetest.Quality(a), judgetest.Quality(b); {
			case qa > qb:
				choice = store.ChoiceA
			case qb > qa:
				choice = store.ChoiceB
			}
			label, err := store.ReviewLabel(choice, shown)
			if err != nil {
				t.Fatal(err)
			}
			if err := roles.ReviewWriter.AddReview(ctx, store.Review{RequestID: p.RequestID, Pipeline: p.Pipeline, CandidateRunID: p.CandidateRunID,
				IncumbentRunID: p.IncumbentRunID, SuiteRunID: p.SuiteRunID, Reviewer: reviewer, ShownFirst: shown, Choice: choice, Label: label,
				InclusionProb: p.JudgedProb * store.DefaultReviewShare, SampleShare: store.DefaultReviewShare, ReviewedAt: time.Now()}); err != nil {
				t.Fatal(err)
			}
			n++
		}
	}
}

// The human-review target: a judge that agrees with the (simulated)
// reviewers on 60% of the pairs — position-consistent, passing every canary
// — yields INCONCLUSIVE under the default policy once its pairs are
// reviewed, naming the judge, κ and its interval; before any review the
// report says it is not validated by human review. The control, an honest
// judge, is validated: no judge rule withholds its verdict. Through the product's code:
// eval.RunSuite on the embedded engine, the review sample and labels of the
// store, eval.AgreementOf and gate.CheckJudge.
func TestSimHumanReviewOfA60PercentJudge(t *testing.T) {
	type sim struct {
		name  string
		judge func() *judgetest.Judge
		want  gate.Status // the second suite run's human-review row
	}
	sims := []sim{{"honest", judgetest.Honest, gate.Pass}}
	for seed := range uint64(3) {
		sims = append(sims, sim{fmt.Sprintf("agrees 60%% seed %d", seed), func() *judgetest.Judge { return judgetest.Agrees(0.6, seed) }, gate.Inconclusive})
	}
	validated := 0
	defer func() { t.Logf("60%% judges: %d of %d validated by human review (want 0)", validated, len(sims)-1) }()
	for _, tc := range sims {
		t.Run(tc.name, func(t *testing.T) {
			st := engine.Open(t)
			id := strings.ReplaceAll(tc.name, " ", "-")
			first := reviewSuite(t, st, tc.judge(), "sim-review-1-"+id)
			truthAgree := 0
			for _, o := range first.Outcomes {
				if o.Pipeline != "candidate" {
					continue
				}
				want := store.JudgmentTie
				switch qi, qc := reviewTruth(caseIndex(o.CaseID)); {
				case qc > qi:
					want = store.JudgmentWin
				case qi > qc:
					want = store.JudgmentLoss
				}
				if o.Pairwise == want {
					truthAgree++
				}
			}
			row, _ := gateRow(first.Comparisons[0].Verdict, gate.GateHumanReview)
			if row.Status != gate.Pass || !strings.Contains(row.Reason, "not validated by human review: 0 reviewed pairs") {
				t.Errorf("before any review: row %+v", row)
			}
			if jr := first.Judging[0]; jr.Unreliable || jr.Pairs.PositionConsistency != 1 || countFailed(jr.Canaries) != 0 {
				t.Errorf("the judge fails another check: %+v", jr)
			}
			reviewed := reviewAll(t, st, "reviewer-1")
			second := reviewSuite(t, st, tc.judge(), "sim-review-2-"+id)
			row, _ = gateRow(second.Comparisons[0].Verdict, gate.GateHumanReview)
			a := second.Judging[0].HumanReview
			if a == nil || a.Overall.Kappa == nil {
				t.Fatalf("no human-review figures in the second report: %+v", second.Judging[0])
			}
			k := a.Overall.Kappa
			t.Logf("judge %s: agrees with the truth on %d of %d judged pairs; %d pairs reviewed (share %.2f): raw agreement %.3f, κ %.3f (95%% CI %.3f to %.3f); verdict before review %s, after %s",
				tc.name, truthAgree, reviewCases, reviewed, store.DefaultReviewShare, a.Overall.Agreement, k.Kappa, k.Interval.Low, k.Interval.High, first.Verdict, second.Verdict)
			if tc.want == gate.Inconclusive && row.Status == gate.Pass {
				validated++
			}
			if share := float64(truthAgree) / reviewCases; tc.want == gate.Inconclusive && (share < 0.54 || share > 0.66) {
				t.Errorf("the judge agrees with the truth on %.2f of the pairs, want about 0.60", share)
			}
			if reviewed < gate.DefaultMinReviews || a.Overall.Pairs != reviewed {
				t.Fatalf("%d pairs reviewed, %d in the figure; the sample must reach min_reviews %d", reviewed, a.Overall.Pairs, gate.DefaultMinReviews)
			}
			if row.Status != tc.want {
				t.Errorf("human-review row %+v, want %s", row, tc.want)
			}
			switch tc.want {
			case gate.Inconclusive:
				if jr := second.Judging[0]; second.Verdict != string(gate.Inconclusive) || !jr.Unreliable || !strings.Contains(strings.Join(jr.Reasons, " "), "judge.min_judge_kappa") || !strings.Contains(row.Reason, "judge judge (fake-judge)") ||
					!strings.Contains(row.Reason, fmt.Sprintf("κ with human reviewers %.2f (95%% CI %.2f to %.2f", k.Kappa, k.Interval.Low, k.Interval.High)) ||
					!strings.Contains(second.Markdown(), "judge.min_judge_kappa") {
					t.Errorf("verdict %s, row %q", second.Verdict, row.Reason)
				}
			case gate.Pass:
				// The judge rules withhold nothing (the second run is the
				// plan's second look at the same cases, which decides
				// nothing by itself: eval/gate looks).
				if jr := second.Judging[0]; jr.Unreliable || k.Kappa != 1 || a.Overall.Agreement != 1 || first.Verdict != string(gate.Pass) {
					t.Errorf("the honest judge: verdicts %s then %s, κ %.2f, judge withheld %v\n%s", first.Verdict, second.Verdict, k.Kappa, jr.Reasons,
						second.Comparisons[0].Verdict.Markdown())
				}
			}
			html, err := second.HTML()
			if err != nil || !strings.Contains(html, `data-testid="human-review"`) || !strings.Contains(second.Markdown(), "Agreement with human reviewers") {
				t.Errorf("the human-review table is missing from the HTML (%v) or Markdown report", err)
			}
		})
	}
}
