package web

import (
	"time"

	"github.com/conductor-shadow/conductor-shadow/eval"
	"github.com/conductor-shadow/conductor-shadow/eval/gate"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// goldenReview is the review page with a pair (withPair) or, without a
// reviewer name, the name form.
func goldenReview(meta pageMeta, withPair bool) reviewView {
	u := urls{meta.Base}
	v := reviewView{Meta: meta, Share: 0.2, Scope: reviewScope{SuiteRunID: "sr-20250602-0001"},
		LabelURL: u.reviewLabels(), ReviewerURL: u.reviewReviewer(), AgreementURL: u.reviewAgreement(), ScriptURL: u.static("review.js")}
	if !withPair {
		return v
	}
	v.Name, v.Sample, v.Reviewed = "Ada <b>", 60, 12
	msgs, ok := parseMessages(`[{"role":"system","content":"Be brief."},{"role":"user","content":"A train leaves at 09:40 and arrives at 13:05. How long is the trip? ` + xssImg + `"}]`)
	v.Pair = &reviewPairView{Token: "sealed-token", Messages: msgs, InputParsed: ok,
		A: "3 hours 25 minutes.", B: "It takes 3 h 25 min.\n\n" + xssImg}
	return v
}

// goldenAgreement is the agreement page over a few reviews of two judges.
func goldenAgreement(meta pageMeta) agreementView {
	at := time.Date(2026, 6, 2, 9, 0, 0, 0, time.UTC)
	var rows []store.ReviewedPair
	labels := []string{store.VerdictCandidate, store.VerdictIncumbent, store.VerdictTie, store.VerdictCandidate, store.VerdictCandidate, store.VerdictIncumbent}
	outcomes := []string{store.JudgmentWin, store.JudgmentLoss, store.JudgmentWin, store.JudgmentInconsistent, store.JudgmentWin, store.JudgmentLoss}
	for i, l := range labels {
		r := store.ReviewedPair{RequestID: "req-" + string(rune('a'+i)), Pipeline: "conductor", CandidateRunID: "c" + string(rune('a'+i)),
			SuiteRunID: "sr-1", SetName: "gsm8k-150", Reviewer: "rev-1", Label: l, InclusionProb: 0.2, ReviewedAt: at,
			Judge: "claude-sonnet-4", Outcome: outcomes[i], Language: "en", LengthBucket: "0-127"}
		if i >= 4 {
			r.SuiteRunID, r.SetName, r.Language = "", "", "ru"
		}
		rows = append(rows, r)
		if i == 0 {
			r.Reviewer, r.Label, r.ReviewedAt = "rev-2", store.VerdictTie, at.Add(time.Minute)
			rows = append(rows, r)
		}
	}
	p := gate.NewDefaultPolicy()
	v := agreementView{Meta: meta, Review: eval.AgreementOf(rows, p.Confidence), Rows: map[string]judgeReviewRow{}, Rules: p.JudgeRules(), ReviewURL: urls{meta.Base}.review()}
	for _, j := range v.Review.Judges {
		v.Rows[j.Judge] = newJudgeReviewRow(p, j)
	}
	return v
}
