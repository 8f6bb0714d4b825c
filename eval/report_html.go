package eval

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"strings"

	"github.com/conductor-shadow/conductor-shadow/eval/charts"
	"github.com/conductor-shadow/conductor-shadow/eval/gate"
	"github.com/conductor-shadow/conductor-shadow/eval/stats"
)

//go:embed report.html.tmpl
var reportHTMLTemplate string

var reportTmpl = template.Must(template.New("report").Funcs(template.FuncMap{
	"pct":     pct,
	"pts":     signedPts,
	"ptsiv":   ptsInterval,
	"usd":     func(f float64) string { return fmt.Sprintf("%.6f", f) },
	"f3":      func(f float64) string { return fmt.Sprintf("%.3f", f) },
	"f0":      func(f float64) string { return fmt.Sprintf("%.0f", f) },
	"p":       func(f float64) string { return fmt.Sprintf("%.4g", f) },
	"lower":   strings.ToLower,
	"method":  gate.MethodName,
	"running": func(method string, st *stats.SequentialState) string { return gate.RunningVerdictIn(method, *st) },
	"short":   shortHash,
	"time":    mdTime,
	"cs":      gate.CSText,
	"iv": func(iv *stats.Interval) string {
		if iv == nil {
			return "-"
		}
		return fmt.Sprintf("[%.4f, %.4f]", iv.Low, iv.High)
	},
}).Parse(reportHTMLTemplate))

// reportPage is what the HTML template renders.
type reportPage struct {
	*Report
	AccuracyChart, CostChart, LatencyChart template.HTML
	ChartErrors                            []string
}

// HTML renders the report as one self-contained page (inline CSS, charts as
// inline SVG, no scripts, no external resources): verdicts with every gate,
// regressions since the previous run highlighted, accuracy per category with
// Wilson 95% intervals, cost per request against accuracy, latency
// distributions, and the overall, comparison and segment tables. A chart that
// cannot be drawn (e.g. no runs) is replaced by a note.
func (r *Report) HTML() (string, error) {
	page := reportPage{Report: r}
	add := func(dst *template.HTML, svg string, err error) {
		if err != nil {
			page.ChartErrors = append(page.ChartErrors, err.Error())
			return
		}
		*dst = template.HTML(svg) // charts escape every label (charts.label)
	}
	cats := r.categories()
	var series []charts.CategorySeries
	var points []charts.CostQualityPoint
	var lats []charts.LatencySeries
	for _, p := range r.Pipelines {
		s := charts.CategorySeries{Name: p.Pipeline}
		for _, c := range cats {
			acc, iv := 0.0, stats.Interval{}
			for _, pc := range p.Categories {
				if pc.Category == c {
					acc = pc.Accuracy
					iv = stats.Wilson(pc.Passed, pc.Graded, stats.Z95)
				}
			}
			s.Acc, s.Low, s.High = append(s.Acc, acc), append(s.Low, iv.Low), append(s.High, iv.High)
		}
		series = append(series, s)
		iv := stats.Wilson(p.Overall.Passed, p.Overall.Graded, stats.Z95)
		points = append(points, charts.CostQualityPoint{Name: p.Pipeline, CostUSD: p.Overall.CostPerRequestUSD, Acc: p.Overall.Accuracy, Low: iv.Low, High: iv.High})
		ls := charts.LatencySeries{Name: p.Pipeline}
		for _, o := range r.Outcomes {
			if o.Pipeline == p.Pipeline {
				ls.LatencyMs = append(ls.LatencyMs, o.LatencyMs)
			}
		}
		lats = append(lats, ls)
	}
	svg, err := charts.AccuracyByCategory(cats, series)
	add(&page.AccuracyChart, svg, err)
	svg, err = charts.CostQuality(points)
	add(&page.CostChart, svg, err)
	svg, err = charts.LatencyCDF(lats)
	add(&page.LatencyChart, svg, err)
	var buf bytes.Buffer
	if err := reportTmpl.Execute(&buf, page); err != nil {
		return "", fmt.Errorf("eval: report html: %w", err)
	}
	return buf.String(), nil
}
