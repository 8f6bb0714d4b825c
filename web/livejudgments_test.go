package web

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/eval"
	"github.com/conductor-shadow/conductor-shadow/eval/judge"
	"github.com/conductor-shadow/conductor-shadow/eval/judge/judgetest"
	"github.com/conductor-shadow/conductor-shadow/store"
	"github.com/conductor-shadow/conductor-shadow/store/storetest"
)

// A live trace's judgments, as live judging stores them (the judge's own
// Compare and Record, p = 0.25): the trace page shows both orders with the
// raw replies, the outcome, the inclusion probability and the cost, and a
// loss decided without the judge with its reason; the overview shows the
// live judge's position consistency over the window — 0.00 for a judge that
// always answers "A".
func TestLiveJudgmentsOnTheTraceAndOverview(t *testing.T) {
	ctx := context.Background()
	st := engine.Open(t)
	now := time.Now().UTC()
	f := storetest.NewFixture("live-1", now.Add(-time.Hour))
	if err := f.Insert(ctx, st); err != nil {
		t.Fatal(err)
	}
	inc, failed, cand := f.Runs[0], f.Runs[1], f.Runs[2]
	pj, err := judge.New(judgetest.AlwaysA(), judge.Config{Worker: "judge", PassScore: 7, Canaries: 2})
	if err != nil {
		t.Fatal(err)
	}
	j := pj.Compare(ctx, "What is 2+2?", inc.FinalOutput, cand.FinalOutput)
	judged := j.Record(eval.JudgmentMeta{RequestID: "live-1", Pipeline: cand.Pipeline, PipelineVersion: cand.PipelineVersion,
		CandidateRun: cand.RunID, IncumbentPipeline: inc.Pipeline, IncumbentRun: inc.RunID, InclusionProb: 0.25})
	loss := eval.PairJudgment{Outcome: store.JudgmentLoss, Usage: eval.JudgeUsage{Worker: "judge", Model: "fake-judge"}, JudgedAt: now}.Record(eval.JudgmentMeta{
		RequestID: "live-1", Pipeline: failed.Pipeline, PipelineVersion: failed.PipelineVersion, CandidateRun: failed.RunID,
		IncumbentPipeline: inc.Pipeline, IncumbentRun: inc.RunID, InclusionProb: 0.25})
	loss.Note = "loss: the candidate has no answer (run error: upstream 503); no judge asked"
	if err := st.(store.JudgmentWriter).InsertJudgments(ctx, []store.Judgment{judged, loss}); err != nil {
		t.Fatal(err)
	}
	srv := newTestServer(t, st, NewDefaultConfig())

	rec := get(t, srv, urls{}.trace("live-1"))
	if rec.Code != http.StatusOK {
		t.Fatalf("trace page: %d", rec.Code)
	}
	doc := parseHTML(t, rec.Body.String())
	rows := byTestID(doc, "judgment-row")
	if len(rows) != 2 {
		t.Fatalf("%d judgment rows, want 2", len(rows))
	}
	for _, r := range rows {
		txt := text(r)
		if p := byTestID(r, "inclusion-prob"); len(p) != 1 || text(p[0]) != "0.25" {
			t.Errorf("row %q: inclusion probability %v", txt, p)
		}
		if !strings.Contains(txt, "live pair") {
			t.Errorf("row %q is not marked a live pair", txt)
		}
		switch attr(r, "data-outcome") {
		case store.JudgmentInconsistent:
			if !strings.Contains(txt, "WINNER: A") || !strings.Contains(txt, "incumbent") || !strings.Contains(txt, "candidate") || !strings.Contains(txt, "$0.001") {
				t.Errorf("judged row lacks both orders' verdicts, replies or cost: %q", txt)
			}
		case store.JudgmentLoss:
			if n := byTestID(r, "judgment-note"); len(n) != 1 || !strings.Contains(text(n[0]), "no judge asked") {
				t.Errorf("loss without a judge lacks its reason: %q", txt)
			}
		default:
			t.Errorf("unexpected outcome %q", attr(r, "data-outcome"))
		}
	}

	rec = get(t, srv, urls{}.overview())
	if rec.Code != http.StatusOK {
		t.Fatalf("overview: %d", rec.Code)
	}
	doc = parseHTML(t, rec.Body.String())
	judges := byTestID(doc, "live-judge-row")
	if len(judges) != 2 {
		t.Fatalf("%d live judge rows, want one per candidate", len(judges))
	}
	for _, r := range judges {
		if attr(r, "data-pipeline") == cand.Pipeline {
			if pc := byTestID(r, "position-consistency"); len(pc) != 1 || text(pc[0]) != "0.00" {
				t.Errorf("always-A judge's live position consistency %v, want 0.00", pc)
			}
		}
	}
}
