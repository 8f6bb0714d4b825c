package eval

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/conductor-shadow/conductor-shadow/store"
)

// LabelledPair is one reviewed pair as a labelled example for calibrating a
// judge (`review export`, GET /api/review/export): the prompt, the two
// answers in the order Order states (always the incumbent's, then the
// candidate's), every human label and every judge's verdict on the pair.
type LabelledPair struct {
	RequestID  string `json:"request_id"`
	SuiteRunID string `json:"suite_run_id,omitempty"`
	// Set is the regression set, ScopeLive for live traffic ("" when the
	// suite run's row is no longer stored).
	Set       string `json:"set"`
	Candidate string `json:"candidate"` // the candidate pipeline
	// Prompt is the request's chat messages as stored (JSON), or a JSON
	// string when the stored input is not JSON.
	Prompt  json.RawMessage `json:"prompt"`
	Order   [2]string       `json:"order"`
	Answers [2]string       `json:"answers"`
	// Labels are the reviewers' labels, by time; Majority the label most of
	// them gave ("" on a tie between labels).
	Labels   []HumanLabel   `json:"human_labels"`
	Majority string         `json:"human_majority"`
	Judges   []JudgeVerdict `json:"judge_verdicts"`
	// InclusionProb is the probability the pair was in the review sample
	// (weigh it 1/InclusionProb for unbiased estimates).
	InclusionProb float64 `json:"inclusion_prob"`
}

// ExportOrder is LabelledPair.Order.
var ExportOrder = [2]string{store.VerdictIncumbent, store.VerdictCandidate}

// HumanLabel is one reviewer's label of a pair, from the candidate's side
// (candidate, incumbent, tie), with the answer they saw first.
type HumanLabel struct {
	Reviewer   string    `json:"reviewer"` // pseudonym (ingest.ReviewerID)
	Label      string    `json:"label"`
	ShownFirst string    `json:"shown_first"`
	ReviewedAt time.Time `json:"reviewed_at"`
}

// JudgeVerdict is one judge's judgment of a pair: its outcome from the
// candidate's side and each order's verdict (incumbent shown first, then
// candidate shown first).
type JudgeVerdict struct {
	Judge          string `json:"judge"`
	Worker         string `json:"worker"`
	PromptVersion  string `json:"prompt_version"`
	Outcome        string `json:"outcome"`
	IncumbentFirst string `json:"incumbent_first"`
	CandidateFirst string `json:"candidate_first"`
}

// LabelledPairs groups reviewed rows (store.ReviewedPair with Texts) into
// one LabelledPair per pair, in the rows' order. Pairs whose answers are no
// longer stored (retention, forget) are left out and counted in skipped.
func LabelledPairs(rows []store.ReviewedPair) (pairs []LabelledPair, skipped int) {
	index := map[store.PairKey]int{}
	seenLabel := map[[2]string]bool{}
	seenJudge := map[[2]string]bool{}
	gone := map[store.PairKey]bool{}
	for _, r := range rows {
		k := r.Key()
		if gone[k] {
			continue
		}
		i, ok := index[k]
		if !ok {
			if r.CandidateAnswer == "" && r.IncumbentAnswer == "" {
				gone[k] = true
				skipped++
				continue
			}
			set := r.SetName // "" when the suite run's row is gone
			if r.SuiteRunID == "" {
				set = ScopeLive
			}
			prompt := json.RawMessage(r.Input)
			if !json.Valid(prompt) {
				prompt, _ = json.Marshal(r.Input)
			}
			pairs = append(pairs, LabelledPair{RequestID: r.RequestID, SuiteRunID: r.SuiteRunID, Set: set, Candidate: r.Pipeline,
				Prompt: prompt, Order: ExportOrder, Answers: [2]string{r.IncumbentAnswer, r.CandidateAnswer},
				Labels: []HumanLabel{}, Judges: []JudgeVerdict{}, InclusionProb: r.InclusionProb})
			i = len(pairs) - 1
			index[k] = i
		}
		p := &pairs[i]
		id := r.RequestID + "\x00" + r.Pipeline + "\x00" + r.CandidateRunID
		if lk := [2]string{id, r.Reviewer}; !seenLabel[lk] {
			seenLabel[lk] = true
			p.Labels = append(p.Labels, HumanLabel{Reviewer: r.Reviewer, Label: r.Label, ShownFirst: r.ShownFirst, ReviewedAt: r.ReviewedAt})
		}
		if jk := [2]string{id, r.Judge}; r.Judge != "" && !seenJudge[jk] {
			seenJudge[jk] = true
			p.Judges = append(p.Judges, JudgeVerdict{Judge: r.Judge, Worker: r.JudgeWorker, PromptVersion: r.PromptVersion,
				Outcome: r.Outcome, IncumbentFirst: r.Verdict1, CandidateFirst: r.Verdict2})
		}
	}
	for i := range pairs {
		p := &pairs[i]
		slices.SortStableFunc(p.Labels, func(a, b HumanLabel) int { return a.ReviewedAt.Compare(b.ReviewedAt) })
		p.Majority = majority(p.Labels)
	}
	return pairs, skipped
}

// majority is the label most labels gave, "" when two labels tie for it.
func majority(ls []HumanLabel) string {
	n := map[string]int{}
	best, count, tied := "", 0, false
	for _, l := range ls {
		n[l.Label]++
	}
	for _, l := range []string{store.VerdictCandidate, store.VerdictIncumbent, store.VerdictTie} {
		switch {
		case n[l] > count:
			best, count, tied = l, n[l], false
		case n[l] == count && count > 0:
			tied = true
		}
	}
	if tied {
		return ""
	}
	return best
}

// ExportSummary counts what ExportReviews wrote.
type ExportSummary struct {
	Pairs   int `json:"pairs"`   // lines written
	Labels  int `json:"labels"`  // human labels in them
	Skipped int `json:"skipped"` // reviewed pairs whose answers are no longer stored
}

// ExportReviews writes every reviewed pair q selects (store.ReviewedQuery;
// Texts is set here, the pages are ReadReviews') to w as JSON Lines, one
// LabelledPair per line. A failed read or write is an error.
func ExportReviews(ctx context.Context, rd store.ReviewReader, q store.ReviewedQuery, w io.Writer) (ExportSummary, error) {
	q.Texts = true
	var sum ExportSummary
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	err := ReadReviews(ctx, rd, q, func(rows []store.ReviewedPair) error {
		pairs, skipped := LabelledPairs(rows)
		sum.Skipped += skipped
		for _, p := range pairs {
			if err := enc.Encode(p); err != nil {
				return err
			}
			sum.Pairs++
			sum.Labels += len(p.Labels)
		}
		return nil
	})
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		return sum, fmt.Errorf("eval: export reviews: %w", err)
	}
	return sum, nil
}

// ReadReviews calls fn with every reviewed row q selects, page by page
// (store.ReviewedQuery: whole pairs, q.PageLimit() pairs a page, in pair
// order from q.After), until a page has fewer pairs than the limit. A failed
// read, or fn's error, ends it with that error.
func ReadReviews(ctx context.Context, rd store.ReviewReader, q store.ReviewedQuery, fn func([]store.ReviewedPair) error) error {
	for {
		rows, err := rd.ReviewedPairs(ctx, q)
		if err != nil {
			return err
		}
		pairs := 0
		for i, r := range rows {
			if i == 0 || r.Key() != rows[i-1].Key() {
				pairs++
			}
		}
		if len(rows) > 0 {
			if err := fn(rows); err != nil {
				return err
			}
		}
		if pairs < q.PageLimit() {
			return nil
		}
		q.After = rows[len(rows)-1].Key()
	}
}

// AllReviews is every reviewed row q selects (ReadReviews' pages joined).
func AllReviews(ctx context.Context, rd store.ReviewReader, q store.ReviewedQuery) ([]store.ReviewedPair, error) {
	var all []store.ReviewedPair
	err := ReadReviews(ctx, rd, q, func(rows []store.ReviewedPair) error {
		all = append(all, rows...)
		return nil
	})
	return all, err
}
