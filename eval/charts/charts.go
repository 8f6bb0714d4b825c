// Package charts renders the report charts as inline SVG (go-chart), so a
// report page works offline: accuracy with intervals per category, cost per
// request against accuracy, and latency distributions (empirical CDFs).
package charts

import (
	"bytes"
	"fmt"
	"html"
	"slices"
	"strings"

	chart "github.com/wcharczuk/go-chart/v2"
	"github.com/wcharczuk/go-chart/v2/drawing"
)

// Width and Height are every chart's size in SVG pixels.
const (
	Width  = 720
	Height = 360
)

// CategorySeries is one pipeline's accuracy per category (0..1), with its
// interval (Low, High), aligned with the categories passed to
// AccuracyByCategory.
type CategorySeries struct {
	Name           string
	Acc, Low, High []float64
}

// AccuracyByCategory draws, per category, one dot per pipeline at its
// accuracy (percent) with a vertical bar over its interval. It returns the
// SVG document as text; an error when a series is not aligned with
// categories or nothing is given.
func AccuracyByCategory(categories []string, series []CategorySeries) (string, error) {
	if len(categories) == 0 || len(series) == 0 {
		return "", fmt.Errorf("charts: accuracy by category: no data")
	}
	var all []chart.Series
	offset := func(i int) float64 { return (float64(i) - float64(len(series)-1)/2) * 0.8 / float64(len(series)) }
	for i, s := range series {
		if len(s.Acc) != len(categories) || len(s.Low) != len(categories) || len(s.High) != len(categories) {
			return "", fmt.Errorf("charts: accuracy by category: series %q has %d values for %d categories", s.Name, len(s.Acc), len(categories))
		}
		col := chart.GetDefaultColor(i)
		dots := chart.ContinuousSeries{Name: label(s.Name, 40), Style: chart.Style{StrokeWidth: chart.Disabled, DotWidth: 4, DotColor: col, StrokeColor: col}}
		for j := range categories {
			x := float64(j) + offset(i)
			dots.XValues = append(dots.XValues, x)
			dots.YValues = append(dots.YValues, 100*s.Acc[j])
			all = append(all, bar(x, 100*s.Low[j], 100*s.High[j], col))
		}
		all = append(all, dots)
	}
	// go-chart spans the x range over the ticks: unlabelled end ticks keep
	// the outer dots inside the plot.
	ticks := []chart.Tick{{Value: -0.6}}
	for j, c := range categories {
		ticks = append(ticks, chart.Tick{Value: float64(j), Label: label(c, 18)})
	}
	ticks = append(ticks, chart.Tick{Value: float64(len(categories)) - 0.4})
	c := chart.Chart{
		Width: Width, Height: Height,
		Background: chart.Style{Padding: chart.Box{Top: 20, Left: 20, Right: 20, Bottom: 20}},
		XAxis:      chart.XAxis{Name: "category", Ticks: ticks},
		YAxis:      chart.YAxis{Name: "accuracy (%)", Ticks: linearTicks(0, 100, 5, "%.0f")},
		Series:     all,
	}
	withLegend(&c)
	return render(c)
}

// CostQualityPoint is one pipeline: mean cost per request (USD) against
// accuracy (0..1) with its interval.
type CostQualityPoint struct {
	Name           string
	CostUSD        float64
	Acc, Low, High float64
}

// CostQuality draws one labelled dot per pipeline, cost per request on x and
// accuracy (percent) on y, with a vertical bar over the accuracy interval.
func CostQuality(points []CostQualityPoint) (string, error) {
	if len(points) == 0 {
		return "", fmt.Errorf("charts: cost vs quality: no data")
	}
	var all []chart.Series
	ann := chart.AnnotationSeries{}
	maxCost := 0.0
	for _, p := range points {
		maxCost = max(maxCost, p.CostUSD)
	}
	if maxCost == 0 {
		maxCost = 1
	}
	for i, p := range points {
		col := chart.GetDefaultColor(i)
		all = append(all, bar(p.CostUSD, 100*p.Low, 100*p.High, col), chart.ContinuousSeries{
			Name:    label(p.Name, 40),
			Style:   chart.Style{StrokeWidth: chart.Disabled, DotWidth: 5, DotColor: col, StrokeColor: col},
			XValues: []float64{p.CostUSD}, YValues: []float64{100 * p.Acc},
		})
		ann.Annotations = append(ann.Annotations, chart.Value2{XValue: p.CostUSD, YValue: 100 * p.Acc, Label: label(p.Name, 24)})
	}
	all = append(all, ann)
	c := chart.Chart{
		Width: Width, Height: Height,
		Background: chart.Style{Padding: chart.Box{Top: 20, Left: 20, Right: 40, Bottom: 20}},
		XAxis:      chart.XAxis{Name: "cost per request (USD)", Ticks: linearTicks(0, maxCost*1.25, 5, "%.4g")},
		YAxis:      chart.YAxis{Name: "accuracy (%)", Ticks: linearTicks(0, 100, 5, "%.0f")},
		Series:     all,
	}
	return render(c)
}

// LatencySeries is one pipeline's run latencies in ms (any order).
type LatencySeries struct {
	Name      string
	LatencyMs []float64
}

// LatencyCDF draws each pipeline's empirical latency distribution: the
// fraction of runs (percent) finished within x ms.
func LatencyCDF(series []LatencySeries) (string, error) {
	var all []chart.Series
	for i, s := range series {
		if len(s.LatencyMs) == 0 {
			continue
		}
		v := slices.Clone(s.LatencyMs)
		slices.Sort(v)
		cs := chart.ContinuousSeries{Name: label(s.Name, 40), Style: chart.Style{StrokeWidth: 2, StrokeColor: chart.GetDefaultColor(i)}}
		for k, x := range v {
			cs.XValues = append(cs.XValues, x)
			cs.YValues = append(cs.YValues, 100*float64(k+1)/float64(len(v)))
		}
		if len(v) == 1 { // a line needs two points
			cs.XValues = append([]float64{0}, cs.XValues...)
			cs.YValues = append([]float64{0}, cs.YValues...)
		}
		all = append(all, cs)
	}
	if len(all) == 0 {
		return "", fmt.Errorf("charts: latency distribution: no data")
	}
	c := chart.Chart{
		Width: Width, Height: Height,
		Background: chart.Style{Padding: chart.Box{Top: 20, Left: 20, Right: 20, Bottom: 20}},
		XAxis:      chart.XAxis{Name: "latency (ms)", ValueFormatter: func(v any) string { return fmt.Sprintf("%.0f", v) }},
		YAxis:      chart.YAxis{Name: "runs finished (%)", Ticks: linearTicks(0, 100, 5, "%.0f")},
		Series:     all,
	}
	withLegend(&c)
	return render(c)
}

// withLegend adds a legend of the named series only (error bars have no name).
func withLegend(c *chart.Chart) {
	named := *c
	named.Series = nil
	for _, s := range c.Series {
		if s.GetName() != "" {
			named.Series = append(named.Series, s)
		}
	}
	c.Elements = []chart.Renderable{chart.LegendThin(&named)}
}

// linearTicks returns n+1 evenly spaced labelled ticks from lo to hi.
func linearTicks(lo, hi float64, n int, format string) []chart.Tick {
	out := make([]chart.Tick, 0, n+1)
	for i := range n + 1 {
		v := lo + (hi-lo)*float64(i)/float64(n)
		out = append(out, chart.Tick{Value: v, Label: fmt.Sprintf(format, v)})
	}
	return out
}

// bar is an unnamed vertical line from (x, lo) to (x, hi).
func bar(x, lo, hi float64, col drawing.Color) chart.ContinuousSeries {
	return chart.ContinuousSeries{
		Style:   chart.Style{StrokeWidth: 2, StrokeColor: col.WithAlpha(160)},
		XValues: []float64{x, x}, YValues: []float64{lo, hi},
	}
}

func render(c chart.Chart) (string, error) {
	var buf bytes.Buffer
	if err := c.Render(chart.SVG, &buf); err != nil {
		return "", fmt.Errorf("charts: render: %w", err)
	}
	return buf.String(), nil
}

// label clips s to n runes and escapes it for XML: go-chart writes text into
// the SVG unescaped.
func label(s string, n int) string { return html.EscapeString(clip(s, n)) }

func clip(s string, n int) string {
	r := []rune(strings.TrimSpace(s))
	if len(r) <= n {
		return string(r)
	}
	return string(r[:n-1]) + "…"
}
