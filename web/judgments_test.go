package web

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/conductor-shadow/conductor-shadow/eval"
	"github.com/conductor-shadow/conductor-shadow/eval/judge"
	"github.com/conductor-shadow/conductor-shadow/eval/judge/judgetest"
	"github.com/conductor-shadow/conductor-shadow/shadow"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// A pairwise suite run judged by a coin-flipping judge of the incumbent's
// model family, through the product's suite runner: the suite-run page shows
// the judge's position consistency, that it was not trusted and the family
// warning; a case's trace page shows both orders of its judgment, its
// canaries and the same position consistency over the suite run.
func TestJudgmentsOnTheSuiteRunAndTracePages(t *testing.T) {
	st := engine.Open(t)
	var b strings.Builder
	for i := range 30 {
		fmt.Fprintf(&b, `{"id": "c%02d", "category": "qa", "input": "Question %d?", "grader": "pairwise"}`+"\n", i, i)
	}
	path := filepath.Join(t.TempDir(), "pairs.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	set, err := eval.LoadSet(path)
	if err != nil {
		t.Fatal(err)
	}
	j := judgetest.Random(7)
	j.Model = "gpt-5"
	resolve, err := judge.Graders(j, judge.NewDefaultConfig(), eval.NewDefaultCodeConfig())
	if err != nil {
		t.Fatal(err)
	}
	answer := func(q float64) func(string) string {
		return func(c string) string { return judgetest.Answer(c, q) }
	}
	inc := &judgetest.Pipeline{PipelineName: "single:gpt-5", Model: "gpt-5", Answers: answer(7)}
	cand := &judgetest.Pipeline{PipelineName: "candidate", Model: "qwen3-32b", Answers: answer(8)}
	rep, err := eval.RunSuite(context.Background(), eval.SuiteStoresOf(store.NewRoles(st)), set, inc, []shadow.Pipeline{cand},
		eval.SuiteOptions{SuiteRunID: "suite-judged", Graders: resolve})
	if err != nil {
		t.Fatal(err)
	}
	jr := rep.Judging[0]
	want := strconv.FormatFloat(jr.Pairs.PositionConsistency, 'f', 2, 64)
	srv := newTestServer(t, st, NewDefaultConfig())

	rec := get(t, srv, urls{}.suiteRun("suite-judged"))
	if rec.Code != http.StatusOK {
		t.Fatalf("suite run page: %d", rec.Code)
	}
	doc := parseHTML(t, rec.Body.String())
	judges := byTestID(doc, "suite-judge")
	if len(judges) != 1 || !strings.Contains(text(judges[0]), "Judge gpt-5 of candidate: position consistency") {
		t.Fatalf("suite-judge: %d, %q", len(judges), text(judges[0]))
	}
	if pc := byTestID(judges[0], "position-consistency"); len(pc) != 1 || text(pc[0]) != want {
		t.Errorf("suite-run page position consistency %v, want %s", pc, want)
	}
	if u := byTestID(judges[0], "judge-unreliable"); len(u) != 1 || !strings.Contains(text(u[0]), "position consistency") {
		t.Errorf("the untrusted judge is not said: %v", u)
	}
	if w := byTestID(judges[0], "judge-family-warning"); len(w) != 1 || !strings.Contains(text(w[0]), "same model family (openai)") {
		t.Errorf("family warning: %v", w)
	}

	// A case that got a canary, and its trace.
	caseID := jr.Canaries[0].CaseID
	rec = get(t, srv, urls{}.trace("suite-judged/"+caseID))
	if rec.Code != http.StatusOK {
		t.Fatalf("trace page: %d", rec.Code)
	}
	doc = parseHTML(t, rec.Body.String())
	rows := byTestID(doc, "judgment-row")
	real, canaries := 0, 0
	for _, r := range rows {
		if attr(r, "data-canary") == "" {
			real++
			if !strings.Contains(text(r), "candidate") || !strings.Contains(text(r), "WINNER:") {
				t.Errorf("real pair row lacks the verdicts and replies: %q", text(r))
			}
		} else {
			canaries++
		}
	}
	if real != 1 || canaries == 0 {
		t.Errorf("trace %s: %d real judgments, %d canaries", caseID, real, canaries)
	}
	cons := byTestID(doc, "judge-consistency")
	if len(cons) != 1 || text(byTestID(cons[0], "position-consistency")[0]) != want {
		t.Errorf("trace page consistency %v, want %s", cons, want)
	}
}
