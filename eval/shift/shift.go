// Package shift compares the segment mix of live traffic with a regression
// set's and flags a set that no longer represents production.
//
// Per segment dimension (language, has_table, has_code, length_bucket) it
// computes two figures over the dimension's bins:
//
//   - the population stability index (Siddiqi 2006, "Credit Risk Scorecards",
//     ch. 8; Yurdakul 2018, "Statistical Properties of Population Stability
//     Index", Western Michigan University):
//     PSI = Σ_i (L_i − S_i) · ln(L_i / S_i), with L_i and S_i the live and set
//     shares of bin i, each count raised by 0.5 so an empty bin stays finite.
//     Siddiqi's rule of thumb reads PSI < 0.1 as no real shift, 0.1–0.25 as a
//     moderate shift and ≥ 0.25 as a significant one; Yurdakul shows the
//     statistic's spread grows as samples shrink, hence MinLive and MinSet;
//   - Pearson's chi-square goodness-of-fit test of the live counts against
//     the set's shares: χ² = Σ_i (O_i − E_i)² / E_i with E_i = N_live · S_i,
//     k − 1 degrees of freedom; its p-value says whether the mixes differ at
//     all (with large live samples almost any difference is significant,
//     which is why PSI, a size of the shift, raises the flag).
//
// A set is flagged when any dimension's PSI reaches Options.PSIThreshold or
// the share of live prompts that are mostly new words (novelty ≥ 0.5)
// reaches Options.NovelShareThreshold.
package shift

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/conductor-shadow/conductor-shadow/ingest/segment"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// Dimensions are the segment columns compared, in report order.
var Dimensions = []string{"language", "has_table", "has_code", "length_bucket"}

// PSI bands of Siddiqi (2006).
const (
	PSIModerate    = 0.10
	PSISignificant = 0.25
)

// Options tune Compare. Zero values take the defaults.
type Options struct {
	// PSIThreshold flags a dimension whose PSI reaches it (default 0.25,
	// Siddiqi's "significant shift").
	PSIThreshold float64
	// NovelShareThreshold flags a live mix whose share of prompts with
	// novelty ≥ 0.5 reaches it (default 0.3).
	NovelShareThreshold float64
	// MinLive and MinSet are the fewest live requests and set cases a verdict
	// needs (default 100 and 30); below them the report says so and flags nothing.
	MinLive int
	MinSet  int
}

func (o *Options) defaults() {
	if o.PSIThreshold <= 0 {
		o.PSIThreshold = PSISignificant
	}
	if o.NovelShareThreshold <= 0 {
		o.NovelShareThreshold = 0.3
	}
	if o.MinLive <= 0 {
		o.MinLive = 100
	}
	if o.MinSet <= 0 {
		o.MinSet = 30
	}
}

// Bin is one value of a dimension.
type Bin struct {
	Value     string  `json:"value"`
	Set       int     `json:"set"`        // set cases with this value
	Live      int64   `json:"live"`       // live requests with this value
	SetShare  float64 `json:"set_share"`  // 0..1, unsmoothed
	LiveShare float64 `json:"live_share"` // 0..1, unsmoothed
	PSITerm   float64 `json:"psi_term"`   // this bin's term of PSI
}

// Dimension is one dimension's comparison.
type Dimension struct {
	Name      string  `json:"name"`
	Bins      []Bin   `json:"bins"` // by live count, then set count, then value
	PSI       float64 `json:"psi"`
	Band      string  `json:"band"` // "stable", "moderate" or "significant" (Siddiqi 2006); "no data" without live traffic
	ChiSquare float64 `json:"chi_square"`
	DF        int     `json:"df"`
	P         float64 `json:"p"` // Pearson chi-square p-value
	// SmallExpected counts bins whose expected live count is below 5, where
	// the chi-square approximation is rough (Cochran 1954).
	SmallExpected int `json:"small_expected"`
}

// Report is a set's mix against live traffic.
type Report struct {
	SetName      string      `json:"set_name"`
	SetCases     int         `json:"set_cases"`
	From         time.Time   `json:"from"`
	To           time.Time   `json:"to"`
	LiveRequests int64       `json:"live_requests"`
	Dimensions   []Dimension `json:"dimensions"`
	// NovelShare is the share of live requests with novelty ≥ 0.5 (of those
	// with a novelty); MeanNovelty their mean novelty; -1 when none has one.
	NovelShare  float64 `json:"novel_share"`
	MeanNovelty float64 `json:"mean_novelty"`
	// Enough is false when live requests or set cases are below the minimum.
	Enough bool `json:"enough"`
	// Flagged: the set no longer represents production; Reasons say why.
	Flagged      bool     `json:"flagged"`
	Reasons      []string `json:"reasons"`
	PSIThreshold float64  `json:"psi_threshold"`
}

// SetMix segments every prompt of a regression set.
func SetMix(seg *segment.Segmenter, prompts []string) []segment.Segments {
	out := make([]segment.Segments, len(prompts))
	for i, p := range prompts {
		out[i] = seg.Of(p)
	}
	return out
}

func liveValue(c store.SegmentCount, dim string) string {
	switch dim {
	case "language":
		if c.Language == "" {
			return segment.Unknown
		}
		return c.Language
	case "has_table":
		return fmt.Sprint(c.HasTable)
	case "has_code":
		return fmt.Sprint(c.HasCode)
	default:
		if c.LengthBucket == "" {
			return segment.Unknown
		}
		return c.LengthBucket
	}
}

func setValue(s segment.Segments, dim string) string {
	return liveValue(store.SegmentCount{Language: s.Language, HasTable: s.HasTable, HasCode: s.HasCode, LengthBucket: s.LengthBucket}, dim)
}

// Compare compares a set's segments with the live mix (store.SegmentMix rows).
func Compare(setName string, set []segment.Segments, live []store.SegmentCount, from, to time.Time, opts Options) (Report, error) {
	opts.defaults()
	if len(set) == 0 {
		return Report{}, errors.New("shift: the regression set has no case")
	}
	r := Report{SetName: setName, SetCases: len(set), From: from, To: to, PSIThreshold: opts.PSIThreshold, Reasons: []string{}, Dimensions: []Dimension{}}
	var withNovelty, novel int64
	var novSum float64
	for _, c := range live {
		r.LiveRequests += c.Requests
		withNovelty += c.WithNovelty
		novel += c.NovelRequests
		novSum += c.NoveltySum
	}
	r.NovelShare, r.MeanNovelty = -1, -1
	if withNovelty > 0 {
		r.NovelShare = float64(novel) / float64(withNovelty)
		r.MeanNovelty = novSum / float64(withNovelty)
	}
	for _, dim := range Dimensions {
		setCounts := map[string]int{}
		for _, s := range set {
			setCounts[setValue(s, dim)]++
		}
		liveCounts := map[string]int64{}
		for _, c := range live {
			liveCounts[liveValue(c, dim)] += c.Requests
		}
		r.Dimensions = append(r.Dimensions, compareDim(dim, setCounts, liveCounts))
	}
	r.Enough = r.LiveRequests >= int64(opts.MinLive) && len(set) >= opts.MinSet
	if !r.Enough {
		r.Reasons = append(r.Reasons, fmt.Sprintf("not enough data for a verdict: %d live requests (need %d), %d set cases (need %d)",
			r.LiveRequests, opts.MinLive, len(set), opts.MinSet))
		return r, nil
	}
	for _, d := range r.Dimensions {
		if d.PSI >= opts.PSIThreshold {
			r.Flagged = true
			r.Reasons = append(r.Reasons, fmt.Sprintf("%s: PSI %.3f ≥ %.2f (%s)", d.Name, d.PSI, opts.PSIThreshold, topMoves(d)))
		}
	}
	if r.NovelShare >= opts.NovelShareThreshold {
		r.Flagged = true
		r.Reasons = append(r.Reasons, fmt.Sprintf("%.0f%% of live prompts are mostly words the regression sets do not hold (threshold %.0f%%)",
			100*r.NovelShare, 100*opts.NovelShareThreshold))
	}
	return r, nil
}

// compareDim computes PSI and Pearson's chi-square for one dimension.
func compareDim(name string, set map[string]int, live map[string]int64) Dimension {
	values := map[string]bool{}
	for v := range set {
		values[v] = true
	}
	for v := range live {
		values[v] = true
	}
	var nSet, nLive float64
	for _, c := range set {
		nSet += float64(c)
	}
	for _, c := range live {
		nLive += float64(c)
	}
	k := float64(len(values))
	d := Dimension{Name: name}
	for v := range values {
		b := Bin{Value: v, Set: set[v], Live: live[v]}
		if nSet > 0 {
			b.SetShare = float64(b.Set) / nSet
		}
		if nLive > 0 {
			b.LiveShare = float64(b.Live) / nLive
		}
		// Shares with 0.5 added to every count keep empty bins finite.
		s := (float64(b.Set) + 0.5) / (nSet + 0.5*k)
		l := (float64(b.Live) + 0.5) / (nLive + 0.5*k)
		b.PSITerm = (l - s) * math.Log(l/s)
		d.PSI += b.PSITerm
		if nLive > 0 {
			e := nLive * s
			d.ChiSquare += (float64(b.Live) - e) * (float64(b.Live) - e) / e
			if e < 5 {
				d.SmallExpected++
			}
		}
		d.Bins = append(d.Bins, b)
	}
	sort.Slice(d.Bins, func(i, j int) bool {
		a, b := d.Bins[i], d.Bins[j]
		if a.Live != b.Live {
			return a.Live > b.Live
		}
		if a.Set != b.Set {
			return a.Set > b.Set
		}
		return a.Value < b.Value
	})
	d.DF = len(values) - 1
	d.P = 1
	if nLive == 0 || nSet == 0 {
		// One side is empty: there is no mix to compare.
		d.PSI, d.ChiSquare, d.DF, d.Band = 0, 0, 0, "no data"
		for i := range d.Bins {
			d.Bins[i].PSITerm = 0
		}
		return d
	}
	if d.DF > 0 && nLive > 0 {
		d.P = 1 - distuv.ChiSquared{K: float64(d.DF)}.CDF(d.ChiSquare)
	}
	switch {
	case d.PSI >= PSISignificant:
		d.Band = "significant"
	case d.PSI >= PSIModerate:
		d.Band = "moderate"
	default:
		d.Band = "stable"
	}
	return d
}

// topMoves names the bins whose share moved most, "ru 2% → 31%".
func topMoves(d Dimension) string {
	bins := slices.Clone(d.Bins)
	sort.SliceStable(bins, func(i, j int) bool { return math.Abs(bins[i].PSITerm) > math.Abs(bins[j].PSITerm) })
	var parts []string
	for _, b := range bins[:min(3, len(bins))] {
		parts = append(parts, fmt.Sprintf("%s %.0f%% → %.0f%%", b.Value, 100*b.SetShare, 100*b.LiveShare))
	}
	return "set → live: " + strings.Join(parts, ", ")
}

// Markdown renders the report as a section of a suite report.
func (r Report) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n## Shift: %s against live traffic\n\n", r.SetName)
	fmt.Fprintf(&b, "Live traffic received %s – %s: %d requests; set: %d cases.\n\n",
		r.From.UTC().Format("2006-01-02 15:04"), r.To.UTC().Format("2006-01-02 15:04 MST"), r.LiveRequests, r.SetCases)
	switch {
	case !r.Enough:
		fmt.Fprintf(&b, "**No verdict**: %s.\n\n", strings.Join(r.Reasons, "; "))
	case r.Flagged:
		fmt.Fprintf(&b, "**The set no longer represents production**: %s.\n\n", strings.Join(r.Reasons, "; "))
	default:
		fmt.Fprintf(&b, "The set still represents production (every PSI below %.2f).\n\n", r.PSIThreshold)
	}
	b.WriteString("| dimension | PSI | band | χ² | df | p | largest moves (set → live) |\n|---|--:|---|--:|--:|--:|---|\n")
	for _, d := range r.Dimensions {
		fmt.Fprintf(&b, "| %s | %.3f | %s | %.1f | %d | %.3g | %s |\n", d.Name, d.PSI, d.Band, d.ChiSquare, d.DF, d.P, strings.TrimPrefix(topMoves(d), "set → live: "))
	}
	if r.NovelShare >= 0 {
		fmt.Fprintf(&b, "\nNovelty: %.1f%% of live prompts are mostly words absent from the regression sets' vocabulary (mean novelty %.2f).\n", 100*r.NovelShare, r.MeanNovelty)
	}
	b.WriteString("\nPSI = Σ (live − set share) · ln(live / set share), counts +0.5 (Siddiqi 2006; Yurdakul 2018); bands < 0.10 stable, 0.10–0.25 moderate, ≥ 0.25 significant. χ²: Pearson's goodness-of-fit of live counts against the set's shares.\n")
	return b.String()
}
