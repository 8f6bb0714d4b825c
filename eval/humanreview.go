package eval

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/conductor-shadow/conductor-shadow/eval/gate"
	"github.com/conductor-shadow/conductor-shadow/eval/stats"
	"github.com/conductor-shadow/conductor-shadow/ingest/segment"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// Judge–human agreement compares, pair by pair, a pairwise judge's outcome
// (from the candidate's side: win, loss, tie, inconsistent) with the labels
// human reviewers gave the same pair on the review page (candidate,
// incumbent, tie). The categories are the candidate better, the incumbent
// better, a tie, and — the judge's only — inconsistent (its two orders
// disagreed): a human never says "inconsistent", so such a pair always
// counts as a disagreement. Each label weighs 1/π (π the pair's inclusion
// probability in the review sample, store.Review.InclusionProb:
// Horvitz–Thompson) shared among the pair's reviewers, so every pair weighs
// 1/π however many reviewers it has; the interval of κ uses Kish's effective
// number of pairs (stats.KishN). Agreement is the weighted share of labels
// equal to the judge's outcome; κ is stats.CohenKappa with the large-sample
// standard error of Fleiss, Cohen & Everitt 1969.

// Agreement categories, in the order of the agreement table.
const (
	catCandidate = iota
	catIncumbent
	catTie
	catInconsistent
	numCats
)

// judgeCategory is the category of a judge's outcome; false for an error
// or an unknown outcome.
func judgeCategory(outcome string) (int, bool) {
	switch outcome {
	case store.JudgmentWin:
		return catCandidate, true
	case store.JudgmentLoss:
		return catIncumbent, true
	case store.JudgmentTie:
		return catTie, true
	case store.JudgmentInconsistent:
		return catInconsistent, true
	}
	return 0, false
}

// humanCategory is the category of a reviewer's label; false for a skip.
func humanCategory(label string) (int, bool) {
	switch label {
	case store.VerdictCandidate:
		return catCandidate, true
	case store.VerdictIncumbent:
		return catIncumbent, true
	case store.VerdictTie:
		return catTie, true
	}
	return 0, false
}

// Agreement scopes (AgreementFigure.Scope): every reviewed pair, one
// regression set's ("set:gsm8k-150"), live traffic's, one segment's
// ("segment:lang:ru").
const (
	ScopeAll  = "all"
	ScopeLive = "live"
)

// AgreementFigure is a judge's (or the reviewers') agreement over one scope.
type AgreementFigure struct {
	Scope   string `json:"scope"`
	Pairs   int    `json:"pairs"`   // distinct reviewed pairs
	Reviews int    `json:"reviews"` // labels (skips apart)
	// Agreement (0..1) is the weighted share of labels equal to the judge's outcome.
	Agreement float64 `json:"agreement"`
	// Kappa is Cohen's κ with its interval; nil when it is undefined (Note).
	Kappa *stats.Kappa `json:"kappa,omitempty"`
	Note  string       `json:"note,omitempty"`
}

// KappaText is "κ 0.42 (95% CI 0.25 to 0.59)", or the note when there is no κ.
func (f AgreementFigure) KappaText() string {
	if f.Kappa == nil {
		if f.Note == "" {
			return "κ —"
		}
		return "κ — (" + f.Note + ")"
	}
	k := f.Kappa
	return fmt.Sprintf("κ %.2f (%.0f%% CI %.2f to %.2f)", k.Kappa, 100*k.Confidence, k.Interval.Low, k.Interval.High)
}

// JudgeAgreement is one judge's agreement with human reviewers: over every
// reviewed pair it judged, per regression set (and live traffic) and per
// segment of the pairs' prompts.
type JudgeAgreement struct {
	Judge     string            `json:"judge"` // store.Judgment.Judge: the model id
	Overall   AgreementFigure   `json:"overall"`
	BySet     []AgreementFigure `json:"by_set,omitempty"`
	BySegment []AgreementFigure `json:"by_segment,omitempty"`
}

// Rows are a's figures as a report lists them: overall, per set, per segment.
func (a JudgeAgreement) Rows() []AgreementFigure {
	return append(append([]AgreementFigure{a.Overall}, a.BySet...), a.BySegment...)
}

// Evidence is the gate's view of a's overall figure.
func (a JudgeAgreement) Evidence() gate.ReviewEvidence {
	o := a.Overall
	return gate.ReviewEvidence{Pairs: o.Pairs, Reviews: o.Reviews, Agreement: o.Agreement, Kappa: o.Kappa, Note: o.Note}
}

// HumanReview is the agreement of every reviewed judge and between the
// reviewers themselves: Reviewers is over the pairs with two reviewers or
// more, the first two (by time) as the two raters.
type HumanReview struct {
	Pairs     int              `json:"pairs"`   // distinct pairs with a label
	Reviews   int              `json:"reviews"` // labels (skips apart)
	Judges    []JudgeAgreement `json:"judges"`
	Reviewers AgreementFigure  `json:"reviewers"`
}

// Judge returns the agreement of judge (store.Judgment.Judge), if reviewed.
func (h HumanReview) Judge(judge string) (JudgeAgreement, bool) {
	i := slices.IndexFunc(h.Judges, func(a JudgeAgreement) bool { return a.Judge == judge })
	if i < 0 {
		return JudgeAgreement{}, false
	}
	return h.Judges[i], true
}

// AgreementOf computes the human-review figures from the reviewed rows
// (store.ReviewReader.ReviewedPairs: one per review and judgment of its
// pair) at confidence (0 < c < 1) for the intervals. Skips and rows with a
// judge error or no judgment count in no judge figure.
func AgreementOf(rows []store.ReviewedPair, confidence float64) HumanReview {
	out := HumanReview{Judges: []JudgeAgreement{}}
	pairs, reviews := map[store.PairKey]bool{}, map[[2]string]store.ReviewedPair{}
	byJudge := map[string][]store.ReviewedPair{}
	for _, r := range rows {
		if _, ok := humanCategory(r.Label); !ok {
			continue
		}
		pairs[r.Key()] = true
		k := [2]string{r.RequestID + "\x00" + r.Pipeline + "\x00" + r.CandidateRunID, r.Reviewer}
		reviews[k] = r
		if _, ok := judgeCategory(r.Outcome); ok && r.Judge != "" {
			byJudge[r.Judge] = append(byJudge[r.Judge], r)
		}
	}
	out.Pairs, out.Reviews = len(pairs), len(reviews)
	judges := make([]string, 0, len(byJudge))
	for j := range byJudge {
		judges = append(judges, j)
	}
	slices.Sort(judges)
	for _, j := range judges {
		rs := byJudge[j]
		a := JudgeAgreement{Judge: j, Overall: judgeFigure(ScopeAll, rs, confidence)}
		sets, segs := map[string][]store.ReviewedPair{}, map[string][]store.ReviewedPair{}
		for _, r := range rs {
			sets[setScope(r)] = append(sets[setScope(r)], r)
			for _, s := range SegmentNames(segment.Segments{Language: r.Language, HasTable: r.HasTable, HasCode: r.HasCode, LengthBucket: r.LengthBucket}) {
				segs["segment:"+s] = append(segs["segment:"+s], r)
			}
		}
		a.BySet = figuresOf(sets, confidence)
		a.BySegment = figuresOf(segs, confidence)
		out.Judges = append(out.Judges, a)
	}
	out.Reviewers = reviewerFigure(reviews, confidence)
	return out
}

// setScope is "set:<name>" for a suite pair ("set:?" when its suite run row
// is gone), ScopeLive for live traffic.
func setScope(r store.ReviewedPair) string {
	switch {
	case r.SuiteRunID == "":
		return ScopeLive
	case r.SetName == "":
		return "set:?"
	}
	return "set:" + r.SetName
}

// figuresOf is judgeFigure of each scope, sorted by scope.
func figuresOf(by map[string][]store.ReviewedPair, confidence float64) []AgreementFigure {
	scopes := make([]string, 0, len(by))
	for s := range by {
		scopes = append(scopes, s)
	}
	slices.Sort(scopes)
	out := make([]AgreementFigure, len(scopes))
	for i, s := range scopes {
		out[i] = judgeFigure(s, by[s], confidence)
	}
	return out
}

// weight is 1/π of a review (π ≤ 0 read as 1).
func weight(p float64) float64 {
	if p <= 0 || p > 1 {
		return 1
	}
	return 1 / p
}

// judgeFigure is the agreement of one judge's rows (each a label and the
// judge's outcome on its pair) over scope.
func judgeFigure(scope string, rows []store.ReviewedPair, confidence float64) AgreementFigure {
	perPair := map[store.PairKey]int{}
	pairW := map[store.PairKey]float64{}
	for _, r := range rows {
		perPair[r.Key()]++
		pairW[r.Key()] = weight(r.InclusionProb)
	}
	table := make([][]float64, numCats)
	for i := range table {
		table[i] = make([]float64, numCats)
	}
	for _, r := range rows {
		j, _ := judgeCategory(r.Outcome)
		h, _ := humanCategory(r.Label)
		table[j][h] += pairW[r.Key()] / float64(perPair[r.Key()])
	}
	ws := make([]float64, 0, len(pairW))
	for _, w := range pairW {
		ws = append(ws, w)
	}
	return agreementFigure(scope, table, len(pairW), len(rows), stats.KishN(ws), confidence)
}

// agreementFigure is the agreement and κ of a weighted table over pairs (n the
// effective number of pairs).
func agreementFigure(scope string, table [][]float64, pairs, reviews int, n, confidence float64) AgreementFigure {
	f := AgreementFigure{Scope: scope, Pairs: pairs, Reviews: reviews}
	var total, diag float64
	for i, row := range table {
		for j, v := range row {
			total += v
			if i == j {
				diag += v
			}
		}
	}
	if total == 0 {
		f.Note = "no review"
		return f
	}
	f.Agreement = diag / total
	k, err := stats.CohenKappa(table, n, confidence)
	switch {
	case errors.Is(err, stats.ErrKappaUndefined):
		f.Note = "κ undefined: the judge and the reviewers each used one single label"
	case err != nil:
		f.Note = "κ not computed: " + err.Error()
	default:
		f.Kappa = &k
	}
	return f
}

// reviewerFigure is the agreement between reviewers: on each pair with two
// reviewers or more, the first two labels by time (ties by pseudonym) are the
// two raters.
func reviewerFigure(reviews map[[2]string]store.ReviewedPair, confidence float64) AgreementFigure {
	byPair := map[string][]store.ReviewedPair{}
	for k, r := range reviews {
		byPair[k[0]] = append(byPair[k[0]], r)
	}
	table := make([][]float64, numCats)
	for i := range table {
		table[i] = make([]float64, numCats)
	}
	var ws []float64
	for _, rs := range byPair {
		if len(rs) < 2 {
			continue
		}
		slices.SortFunc(rs, func(a, b store.ReviewedPair) int {
			if c := a.ReviewedAt.Compare(b.ReviewedAt); c != 0 {
				return c
			}
			return strings.Compare(a.Reviewer, b.Reviewer)
		})
		a, _ := humanCategory(rs[0].Label)
		b, _ := humanCategory(rs[1].Label)
		w := weight(rs[0].InclusionProb)
		table[a][b] += w
		ws = append(ws, w)
	}
	return agreementFigure("reviewers", table, len(ws), 2*len(ws), stats.KishN(ws), confidence)
}
