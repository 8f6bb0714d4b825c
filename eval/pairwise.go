package eval

import (
	"context"
	"strings"
	"time"

	"github.com/conductor-shadow/conductor-shadow/store"
)

// Pairwise judging compares a candidate's answer with the incumbent's on the
// same case, asked of an LLM judge in both orders (Zheng et al. 2023, "Judging
// LLM-as-a-Judge with MT-Bench and Chatbot Arena", §3.4: "we call a win only
// when an answer is preferred in both orders"). The outcomes, from the
// candidate's side, are store.JudgmentWin, JudgmentTie, JudgmentLoss,
// JudgmentInconsistent (the orders disagree: never a win) and JudgmentError.
// The gate tests wins against losses: a win is a pair only the candidate
// "passed", a loss one only the incumbent passed, a tie or an inconsistent
// pair is concordant, so Tango's paired interval with the policy's margin
// tests P(win) − P(loss) (stats.Compare).

// PairReference marks the incumbent's outcome on a pairwise case
// (Outcome.Pairwise): it is the side the candidates are judged against, not
// graded on its own.
const PairReference = "reference"

// MaxJudgeReply is the longest judge reply kept per order (runes), in reports
// and the judgments table; longer replies are clipped with "…".
const MaxJudgeReply = 2000

// Labels are the words naming the two answers of a pairwise prompt, in the
// order they are shown.
type Labels struct {
	First  string `json:"first"`
	Second string `json:"second"`
}

// The label words of the judge prompts: LabelsAB for every real pair, and
// LabelsSwapped for the label-swap canary (the same pair in the same
// positions, named by other words in the other order, so a judge that prefers
// a label rather than an answer changes its verdict).
var (
	LabelsAB      = Labels{First: "A", Second: "B"}
	LabelsSwapped = Labels{First: "Response 2", Second: "Response 1"}
)

// String is "First/Second", e.g. "A/B".
func (l Labels) String() string { return l.First + "/" + l.Second }

// JudgeUsage is what an LLM judge's calls cost for one grade or judgment.
type JudgeUsage struct {
	Worker    string  `json:"worker"` // the pool worker that judged
	Model     string  `json:"model"`  // the model id it answered with (else the one asked for)
	Calls     int     `json:"calls"`
	TokensIn  int64   `json:"tokens_in"`
	TokensOut int64   `json:"tokens_out"`
	CostUSD   float64 `json:"cost_usd"`
	// Host is the host[:port] the calls went to (shadow.Call.Host; "" when
	// none was sent); Requests their HTTP requests (attempts); SentBytes and
	// ReceivedBytes their HTTP bodies.
	Host          string `json:"host,omitempty"`
	Requests      int    `json:"requests"`
	SentBytes     int64  `json:"sent_bytes"`
	ReceivedBytes int64  `json:"received_bytes"`
}

// Add sums two usages (the worker, model and host of u win when set).
func (u JudgeUsage) Add(o JudgeUsage) JudgeUsage {
	if u.Worker == "" {
		u.Worker = o.Worker
	}
	if u.Model == "" {
		u.Model = o.Model
	}
	if u.Host == "" {
		u.Host = o.Host
	}
	u.Calls += o.Calls
	u.Requests += o.Requests
	u.TokensIn += o.TokensIn
	u.TokensOut += o.TokensOut
	u.CostUSD += o.CostUSD
	u.SentBytes += o.SentBytes
	u.ReceivedBytes += o.ReceivedBytes
	return u
}

// ScoreCalls sets the Judge* columns of sc (the judge's own calls for this
// grade) from u.
func (u JudgeUsage) ScoreCalls(sc *store.Score) {
	sc.JudgeWorker, sc.JudgeHost = u.Worker, u.Host
	sc.JudgeCalls, sc.JudgeRequests = int32(min(u.Calls, 1<<30)), int32(min(u.Requests, 1<<30))
	sc.JudgeTokensIn, sc.JudgeTokensOut = u.TokensIn, u.TokensOut
	sc.JudgeSentBytes, sc.JudgeReceivedBytes = u.SentBytes, u.ReceivedBytes
}

// OrderVerdict is one order of a pairwise judgment.
type OrderVerdict struct {
	// IncumbentFirst: the incumbent's answer was shown first (order 1).
	IncumbentFirst bool   `json:"incumbent_first"`
	Labels         Labels `json:"labels"`
	// Verdict is the answer the judge preferred, store.VerdictIncumbent or
	// store.VerdictCandidate, or store.VerdictTie; "" when Error is set.
	Verdict string `json:"verdict"`
	// Raw is the judge's reply, clipped to MaxJudgeReply runes.
	Raw   string `json:"raw"`
	Error string `json:"error,omitempty"`
}

// PairJudgment is a pairwise judgment of a candidate's answer against the
// incumbent's, in both orders: Orders[0] shows the incumbent's answer first,
// Orders[1] the candidate's.
type PairJudgment struct {
	PromptVersion string          `json:"prompt_version"`
	Outcome       string          `json:"outcome"` // store.JudgmentWin, …, from the candidate's side
	Orders        [2]OrderVerdict `json:"orders"`
	Usage         JudgeUsage      `json:"usage"`
	// Error says why Outcome is store.JudgmentError ("" otherwise): the
	// first failed order's error, named by its order.
	Error    string    `json:"error,omitempty"`
	JudgedAt time.Time `json:"judged_at"`
}

// PairJudge is a grader that judges pairs: eval.GraderPairwise resolved by
// eval/judge. A suite run asks it, for every case graded pairwise, to judge
// each candidate's answer against the incumbent's (and for its canaries);
// Grade compares one answer with the case's reference (`grade --cases`).
// Implementations are safe for concurrent use.
type PairJudge interface {
	Grader
	// JudgePair judges candidate against incumbent on c in both orders with
	// labels (LabelsAB, or LabelsSwapped for the label-swap canary). A failed
	// call or an unreadable reply is an outcome (store.JudgmentError), never
	// a verdict.
	JudgePair(ctx context.Context, c Case, incumbent, candidate string, labels Labels) PairJudgment
}

// PairOutcome is the outcome of a pair from its two orders' verdicts
// (store.Verdict*): the same answer preferred in both is a win or a loss,
// tie in both a tie, anything else inconsistent; an empty verdict (a failed
// order) makes it an error.
func PairOutcome(incumbentFirst, candidateFirst string) string {
	switch {
	case incumbentFirst == "" || candidateFirst == "":
		return store.JudgmentError
	case incumbentFirst != candidateFirst:
		return store.JudgmentInconsistent
	case incumbentFirst == store.VerdictCandidate:
		return store.JudgmentWin
	case incumbentFirst == store.VerdictIncumbent:
		return store.JudgmentLoss
	}
	return store.JudgmentTie
}

// pairValue is the score of a pairwise outcome: win 1, tie or inconsistent
// 0.5, loss 0.
func pairValue(outcome string) float64 {
	switch outcome {
	case store.JudgmentWin:
		return 1
	case store.JudgmentLoss:
		return 0
	}
	return 0.5
}

// JudgmentMeta identifies what a judgment is about, for its stored row.
type JudgmentMeta struct {
	RequestID, SuiteRunID, CaseID           string
	Pipeline, PipelineVersion, CandidateRun string
	IncumbentPipeline, IncumbentRun         string
	Canary                                  string // "" for a real pair
	CanaryPassed                            bool
	// InclusionProb is the probability the pair was sampled for judging; 0
	// is read as 1 (every suite case is judged).
	InclusionProb float64
}

// Record is the stored row of j (store.Judgment).
func (j PairJudgment) Record(m JudgmentMeta) store.Judgment {
	p := m.InclusionProb
	if p <= 0 {
		p = 1
	}
	judge := j.Usage.ID()
	return store.Judgment{
		RequestID: m.RequestID, SuiteRunID: m.SuiteRunID, CaseID: m.CaseID,
		Pipeline: m.Pipeline, PipelineVersion: m.PipelineVersion, CandidateRunID: m.CandidateRun,
		IncumbentPipeline: m.IncumbentPipeline, IncumbentRunID: m.IncumbentRun,
		Judge: judge, JudgeWorker: j.Usage.Worker, PromptVersion: j.PromptVersion,
		Canary: m.Canary, CanaryPassed: m.CanaryPassed, Labels: j.Orders[0].Labels.String(),
		JudgedAt: j.JudgedAt.UTC().Truncate(time.Millisecond), Outcome: j.Outcome,
		Verdict1: j.Orders[0].Verdict, Raw1: clip(j.Orders[0].Raw, MaxJudgeReply),
		Verdict2: j.Orders[1].Verdict, Raw2: clip(j.Orders[1].Raw, MaxJudgeReply),
		InclusionProb: p, TokensIn: j.Usage.TokensIn, TokensOut: j.Usage.TokensOut, CostUSD: j.Usage.CostUSD,
		Error:     j.Error,
		JudgeHost: j.Usage.Host, JudgeCalls: int32(min(j.Usage.Calls, 1<<30)), JudgeRequests: int32(min(j.Usage.Requests, 1<<30)),
		SentBytes: j.Usage.SentBytes, ReceivedBytes: j.Usage.ReceivedBytes,
	}
}

// ID is the judge as judgments name it (store.Judgment.Judge): the model
// id, else the worker.
func (u JudgeUsage) ID() string {
	if u.Model != "" {
		return u.Model
	}
	return u.Worker
}

// JudgeName is "worker (model)", or the one of them that is known.
func (u JudgeUsage) JudgeName() string {
	switch {
	case u.Worker == "":
		return u.Model
	case u.Model == "" || u.Model == u.Worker:
		return u.Worker
	}
	return u.Worker + " (" + u.Model + ")"
}

// PadAnswer is the padded canary's answer: s followed by its own content
// again, so it says nothing more and is twice as long.
func PadAnswer(s string) string {
	s = strings.TrimRight(s, "\n ")
	return s + "\n\n" + s
}
