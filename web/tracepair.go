package web

import (
	"cmp"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/conductor-shadow/conductor-shadow/store"
)

// tracePair is what the trace page opens with: the incumbent's answer beside
// one candidate's (the run the traces list pairs, defaultCandidate, or the
// one the page's candidate parameter names), the differences, the judge's verdicts on that pair, and
// then the candidate's plan.
type tracePair struct {
	Incumbent, Candidate runView
	Cost, Latency        deltaCell
	Agreement            deltaCell
	// Judgments are the real pairs (no canaries) judged for the candidate's
	// run, else for its pipeline.
	Judgments []store.Judgment
	// Others link to the page with another candidate run beside the incumbent.
	Others []pairLink
	// Asked is the request's last user message (clipped), so the answers
	// are read with their question.
	Asked string
}

// pairLink is one other candidate run of the trace.
type pairLink struct {
	Label, URL string
}

// errNoSuchCandidate: the candidate parameter names no candidate run of the trace.
type errNoSuchCandidate string

func (e errNoSuchCandidate) Error() string {
	return fmt.Sprintf("candidate %q is not a candidate run of this trace", string(e))
}

// newTracePair picks the pair of v: its first incumbent run and the candidate
// run candidateRunID ("" for the first candidate run). ok is false when the
// trace lacks either side; err is errNoSuchCandidate for an unknown run id.
func newTracePair(v traceView, candidateRunID string) (p tracePair, ok bool, err error) {
	inc, cands := v.incumbents(), v.candidates()
	if candidateRunID != "" {
		found := false
		for _, c := range cands {
			if c.Run.RunID == candidateRunID {
				p.Candidate, found = c, true
			}
		}
		if !found {
			return p, false, errNoSuchCandidate(candidateRunID)
		}
	} else if len(cands) > 0 {
		p.Candidate = defaultCandidate(cands)
	}
	if len(inc) == 0 || len(cands) == 0 {
		return p, false, nil
	}
	p.Incumbent = inc[0]
	a, b := p.Incumbent.Run, p.Candidate.Run
	p.Cost = costDelta(a.CostUSD, b.CostUSD)
	p.Latency = latencyDelta(a.LatencyMs, b.LatencyMs, a.LatencyMs > 0 && b.LatencyMs > 0)
	// The traces list's agreement (store.TraceSummary.PairAgreement).
	agree := int8(-1)
	if a.Status == store.StatusOK && b.Status == store.StatusOK {
		agree = 0
		if store.NormalizeAnswer(a.FinalOutput) == store.NormalizeAnswer(b.FinalOutput) {
			agree = 1
		}
	}
	p.Agreement = agreementCell(agree)
	var byPipeline []store.Judgment
	for _, j := range v.Judging.Rows {
		if j.Canary != "" {
			continue
		}
		switch {
		case j.CandidateRunID == b.RunID:
			p.Judgments = append(p.Judgments, j)
		case j.CandidateRunID == "" && j.Pipeline == b.Pipeline:
			byPipeline = append(byPipeline, j)
		}
	}
	if len(p.Judgments) == 0 {
		p.Judgments = byPipeline
	}
	p.Asked = truncRunes(lastUserMessage(v), pairAskedRunes)
	base := urls{v.Meta.Base}.trace(v.Request.RequestID)
	for _, c := range cands {
		if c.Run.RunID != b.RunID {
			p.Others = append(p.Others, pairLink{Label: strings.TrimSpace(c.Run.Pipeline + " " + c.Run.PipelineVersion),
				URL: base + "?" + url.Values{"candidate": {c.Run.RunID}}.Encode()})
		}
	}
	return p, true, nil
}

// isPairCandidate reports whether r is the run the page opens with.
func (v traceView) isPairCandidate(r runView) bool {
	return v.HasPair && r.Run.RunID == v.Pair.Candidate.Run.RunID
}

// verdictWord says what a judgment's outcome means for the candidate.
func verdictWord(outcome string) string {
	switch outcome {
	case store.JudgmentWin:
		return "the candidate's answer is better"
	case store.JudgmentLoss:
		return "the incumbent's answer is better"
	case store.JudgmentTie:
		return "the answers are as good"
	case store.JudgmentInconsistent:
		return "the two orders disagree (no winner)"
	}
	return outcome
}

// inPair reports whether r is one of the two runs the page opens with (its
// answer is shown there, not again below).
func (v traceView) inPair(r runView) bool {
	return v.HasPair && (r.Run.RunID == v.Pair.Candidate.Run.RunID || r.Run.RunID == v.Pair.Incumbent.Run.RunID)
}

// answersHeading titles the trace page's section of the answers not in the pair.
func answersHeading(v traceView) string {
	if v.HasPair && len(v.Runs) > 2 {
		return "Other answers"
	}
	return "Answers"
}

// defaultCandidate is the candidate run the traces list pairs with the
// incumbent (store.TraceSummary.PairCandidate): of the first candidate
// pipeline by name, its newest run by start, then by run id.
func defaultCandidate(cands []runView) runView {
	return slices.MinFunc(cands, func(a, b runView) int {
		return cmp.Or(cmp.Compare(a.Run.Pipeline, b.Run.Pipeline), b.Run.StartedAt.Compare(a.Run.StartedAt),
			cmp.Compare(a.Run.RunID, b.Run.RunID))
	})
}

// pairAskedRunes clips the question shown above the pair.
const pairAskedRunes = 400

// lastUserMessage is the input's last user message, else the input as stored.
func lastUserMessage(v traceView) string {
	if v.InputParsed {
		for i := len(v.Messages) - 1; i >= 0; i-- {
			if v.Messages[i].Role == "user" {
				return v.Messages[i].Content
			}
		}
	}
	return v.Request.Input
}
