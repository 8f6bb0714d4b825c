package web

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/conductor-shadow/conductor-shadow/eval"
	"github.com/conductor-shadow/conductor-shadow/eval/stats"
	"github.com/conductor-shadow/conductor-shadow/store"
	"github.com/conductor-shadow/conductor-shadow/store/figure"
)

// maxSegmentBars bounds the quality-by-segment chart to the segments with
// the most live pairs.
const maxSegmentBars = 6

// axisTicks returns the y axis of a chart whose values reach top: round
// ticks from 0 (niceTicks, about chartTicks+1 of them), the last one at or
// above top.
func axisTicks(top float64) []float64 {
	if math.IsNaN(top) || math.IsInf(top, 0) || top <= 0 {
		top = 1
	}
	ticks, _ := niceTicks(0, top, chartTicks+1)
	return ticks
}

// fmtTickUSD renders a USD axis tick with the fewest decimals that tell the
// ticks apart (at least two): "$0.005", "$0.0125", "$1.50".
func fmtTickUSD(v float64) string {
	for d := 2; d <= 8; d++ {
		s := strconv.FormatFloat(v, 'f', d, 64)
		if back, _ := strconv.ParseFloat(s, 64); math.Abs(back-v) <= 1e-12 {
			return "$" + s
		}
	}
	return fmtUSD(v)
}

// fmtTickMs renders a latency axis tick: "250 ms", "1.5 s", "30 s".
func fmtTickMs(ms float64) string {
	if ms >= 1000 {
		return strconv.FormatFloat(ms/1000, 'g', 3, 64) + " s"
	}
	return strconv.FormatFloat(ms, 'g', 4, 64) + " ms"
}

// fmtTickPct renders a 0..1 share as "25%".
func fmtTickPct(v float64) string { return strconv.FormatFloat(100*v, 'g', 3, 64) + "%" }

// fmtTickTime renders an x tick: the date and minute for spans over a day,
// the minute otherwise.
func fmtTickTime(t time.Time, span time.Duration) string {
	if span > 24*time.Hour {
		return t.UTC().Format("Jan 2 15:04")
	}
	return t.UTC().Format("15:04")
}

// barGroup is one series of a bar chart: a value per category.
type barGroup struct {
	Name   string
	Class  string
	Values []float64
}

// groupBar is one drawn bar, px, with its tooltip.
type groupBar struct {
	X, Y, W, H float64
	Class      string
	Title      string
}

// groupChart is a server-drawn SVG grouped bar chart: categories along x,
// one bar per group in each.
type groupChart struct {
	ID, Title, Unit string
	Width, Height   float64
	Bars            []groupBar
	Legend          []barGroup
	XTicks, YTicks  []chartTick
	Empty           string // said instead of the chart when there is nothing to draw
}

// newGroupChart lays out groups over categories; fmtY formats the y ticks and
// the bars' tooltips.
func newGroupChart(id, title, unit string, categories []string, groups []barGroup, fmtY func(float64) string) groupChart {
	c := groupChart{ID: id, Title: title, Unit: unit, Width: chartW, Height: chartH, Legend: groups}
	var maxY float64
	for _, g := range groups {
		for _, v := range g.Values {
			maxY = max(maxY, v)
		}
	}
	ticks := axisTicks(maxY)
	maxY = ticks[len(ticks)-1]
	plotW, plotH := chartW-chartPadL-chartPadR, chartH-chartPadT-chartPadB
	y := func(v float64) float64 { return chartPadT + plotH*(1-v/maxY) }
	if len(categories) == 0 || len(groups) == 0 {
		return c
	}
	slot := plotW / float64(len(categories))
	bw := slot * 0.8 / float64(len(groups))
	for i, cat := range categories {
		x0 := chartPadL + slot*float64(i) + slot*0.1
		for k, g := range groups {
			v := g.Values[i]
			c.Bars = append(c.Bars, groupBar{X: x0 + bw*float64(k), Y: y(v), W: max(bw-1, 1), H: chartPadT + plotH - y(v),
				Class: g.Class, Title: g.Name + " · " + cat + ": " + fmtY(v)})
		}
		c.XTicks = append(c.XTicks, chartTick{Pos: chartPadL + slot*(float64(i)+0.5), Label: cat})
	}
	for _, v := range ticks {
		c.YTicks = append(c.YTicks, chartTick{Pos: y(v), Label: fmtY(v)})
	}
	return c
}

// binLabel names a latency bin by its bounds: "<10", "10–20", "≥50k" (ms).
func binLabel(lower, upper float64) string {
	f := func(ms float64) string {
		if ms >= 1000 {
			return strconv.FormatFloat(ms/1000, 'g', 3, 64) + "k"
		}
		return strconv.FormatFloat(ms, 'g', 4, 64)
	}
	switch {
	case lower == 0:
		return "<" + f(upper)
	case upper == 0:
		return "≥" + f(lower)
	}
	return f(lower) + "–" + f(upper)
}

// newLatencyHistogram draws each pipeline's share of runs per latency bin
// (store.LatencyEdgesMs), the production incumbent beside each candidate;
// shares, not counts, so pipelines with different run counts compare.
func newLatencyHistogram(bins []store.LatencyBin, classes map[string]string) groupChart {
	title := "Latency histogram: share of runs per latency bin"
	if len(bins) == 0 {
		c := newGroupChart("latency-histogram", title, "% of runs, bins in ms", nil, nil, fmtTickPct)
		c.Empty = "No run of known latency in this window."
		return c
	}
	lo, hi := int64(math.MaxInt64), int64(0)
	total := map[string]int64{}
	var order []string
	for _, b := range bins {
		if _, ok := total[b.Pipeline]; !ok {
			order = append(order, b.Pipeline)
		}
		total[b.Pipeline] += b.Runs
		lo, hi = min(lo, b.Bin), max(hi, b.Bin)
	}
	var cats []string
	for i := lo; i <= hi; i++ {
		var lower, upper float64
		if i > 0 {
			lower = store.LatencyEdgesMs[i-1]
		}
		if int(i) < len(store.LatencyEdgesMs) {
			upper = store.LatencyEdgesMs[i]
		}
		cats = append(cats, binLabel(lower, upper))
	}
	var groups []barGroup
	for _, p := range order {
		g := barGroup{Name: p, Class: classes[p], Values: make([]float64, len(cats))}
		for _, b := range bins {
			if b.Pipeline == p {
				g.Values[b.Bin-lo] = float64(b.Runs) / float64(total[p])
			}
		}
		groups = append(groups, g)
	}
	return newGroupChart("latency-histogram", title, "% of runs, bins in ms", cats, groups, fmtTickPct)
}

// newSegmentQuality draws accuracy per segment from each candidate's latest
// suite run (eval.CandidateComparison's segments: Passed / Graded, the
// figure.Accuracy definition the report uses), the suite baseline of the
// first candidate's run beside them, on the maxSegmentBars segments with the
// most cases.
func newSegmentQuality(rows []cutoverRow, classes map[string]string) groupChart {
	const id, title, unit = "segment-quality", "Quality by segment: accuracy in the latest suite run", "% of graded cases"
	cases := map[string]int{}
	var base *eval.CandidateComparison
	var baseName string
	for _, r := range rows {
		if r.Suite == nil || r.Suite.Comparison == nil {
			continue
		}
		if base == nil {
			base, baseName = r.Suite.Comparison, "suite baseline "+r.Suite.Baseline
		}
		for _, sg := range r.Suite.Comparison.Comparison.Segments {
			cases[sg.Name] = max(cases[sg.Name], sg.Candidate.Graded)
		}
	}
	if len(cases) == 0 {
		c := newGroupChart(id, title, unit, nil, nil, fmtTickPct)
		c.Empty = "No suite run with graded segments yet."
		return c
	}
	var segs []string
	for s := range cases {
		segs = append(segs, s)
	}
	slices.SortFunc(segs, func(a, b string) int {
		if cases[a] != cases[b] {
			return cases[b] - cases[a]
		}
		return strings.Compare(a, b)
	})
	segs = segs[:min(len(segs), maxSegmentBars)]
	values := func(cmp *eval.CandidateComparison, arm func(stats.Segment) stats.Arm) []float64 {
		out := make([]float64, len(segs))
		for _, sg := range cmp.Comparison.Segments {
			if i := slices.Index(segs, sg.Name); i >= 0 {
				a := arm(sg)
				out[i] = figure.Accuracy(a.Passed, a.Graded)
			}
		}
		return out
	}
	groups := []barGroup{{Name: baseName, Class: "series-7",
		Values: values(base, func(s stats.Segment) stats.Arm { return s.Incumbent })}}
	for _, r := range rows {
		if r.Suite != nil && r.Suite.Comparison != nil {
			groups = append(groups, barGroup{Name: r.Candidate, Class: classes[r.Candidate],
				Values: values(r.Suite.Comparison, func(s stats.Segment) stats.Arm { return s.Candidate })})
		}
	}
	return newGroupChart(id, title, unit, segs, groups, fmtTickPct)
}

// coverageLine draws the coverage buckets (figure.Coverage, 0..1) as one
// line over the window.
func coverageLine(from, to time.Time, cov []store.CoveragePoint) lineChart {
	pts := make([]store.PipelinePoint, len(cov))
	for i, c := range cov {
		pts[i] = store.PipelinePoint{Pipeline: "shadowed share of requests", Bucket: c.Bucket, Runs: c.Requests}
	}
	vals := map[time.Time]float64{}
	for _, c := range cov {
		vals[c.Bucket] = c.Coverage
	}
	type line = struct {
		suffix string
		value  func(store.PipelinePoint) float64
		dashed bool
	}
	c := newLineChart("coverage-chart", "Coverage over time: requests with a candidate run", "% of requests received", from, to,
		map[string]string{"shadowed share of requests": "series-2"}, pts,
		[]line{{"", func(p store.PipelinePoint) float64 { return vals[p.Bucket] }, false}}, fmtTickPct)
	return c
}
