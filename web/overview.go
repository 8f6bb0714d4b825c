package web

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/conductor-shadow/conductor-shadow/eval"
	"github.com/conductor-shadow/conductor-shadow/eval/gate"
	"github.com/conductor-shadow/conductor-shadow/store"
	"github.com/conductor-shadow/conductor-shadow/store/figure"
)

// Overview window defaults and chart geometry (px).
const (
	defaultOverviewWindow = 24 * time.Hour
	maxOverviewBuckets    = 48 // the bucket width is the smallest choice giving at most this many

	chartW     = 560.0
	chartH     = 200.0
	chartPadL  = 64.0 // room for the y labels
	chartPadR  = 40.0 // room for the last x label, centred on the right edge
	chartPadT  = 10.0
	chartPadB  = 26.0 // room for the x labels
	maxSeries  = 8    // series-0..7 colour classes in style.css
	chartTicks = 4
)

// bucketChoices are the series' bucket widths in seconds; each divides a day.
var bucketChoices = []int{60, 300, 900, 3600, 3 * 3600, 6 * 3600, 86400}

// overviewQuery is the overview page's URL state.
type overviewQuery struct {
	App      string
	From, To time.Time // UTC; zero in the URL means the default window
	Seg      store.SegmentFilter
	// Generated shows the generated load-test rows (source=generated)
	// instead of production traffic.
	Generated bool
}

func (q overviewQuery) values() url.Values {
	v := url.Values{}
	if q.App != "" {
		v.Set("app", q.App)
	}
	if !q.From.IsZero() {
		v.Set("from", fmtFormTime(q.From))
	}
	if !q.To.IsZero() {
		v.Set("to", fmtFormTime(q.To))
	}
	setSegmentValues(v, q.Seg)
	if q.Generated {
		v.Set("source", store.SourceGenerated)
	}
	return v
}

// parseOverviewQuery reads app, from and to (UTC, datetime-local or RFC 3339)
// and the segment filters (parseSegmentFilter).
// Missing bounds default to the 24 h before to (to defaults to now).
func parseOverviewQuery(v url.Values, now time.Time) (overviewQuery, error) {
	q := overviewQuery{App: strings.TrimSpace(v.Get("app"))}
	switch src := strings.TrimSpace(v.Get("source")); src {
	case "":
	case store.SourceGenerated:
		q.Generated = true
	default:
		return q, fmt.Errorf("source %q: the overview shows production traffic, or %q for the generated load-test rows", src, store.SourceGenerated)
	}
	seg, err := parseSegmentFilter(v)
	if err != nil {
		return q, fmt.Errorf("filter: %w", err)
	}
	q.Seg = seg
	for _, f := range []struct {
		name string
		dst  *time.Time
	}{{"from", &q.From}, {"to", &q.To}} {
		if s := strings.TrimSpace(v.Get(f.name)); s != "" {
			t, err := parseFormTime(f.name, s)
			if err != nil {
				return q, err
			}
			*f.dst = t
		}
	}
	if q.To.IsZero() {
		q.To = now.UTC().Truncate(time.Minute).Add(time.Minute)
	}
	if q.From.IsZero() {
		q.From = q.To.Add(-defaultOverviewWindow)
	}
	if !q.To.After(q.From) {
		return q, errors.New("the window's end must be after its start")
	}
	return q, nil
}

// defaultWindow reports whether the URL leaves both window bounds to the
// default.
func defaultWindow(v url.Values) bool {
	return strings.TrimSpace(v.Get("from")) == "" && strings.TrimSpace(v.Get("to")) == ""
}

// followData moves the default window back to the data: when the newest
// stored traffic request was received before the window's start (replayed or
// recorded traffic keeps its recorded time, so the last 24 h hold none of
// it), the window starts 24 h before that request and still ends now, so it
// holds the newest day of traffic, its incumbent runs (started when the
// request was received) and the shadow runs started on it since. It returns
// the window and newest when it moved it, else q and the zero time.
func followData(q overviewQuery, newest time.Time) (overviewQuery, time.Time) {
	if newest.IsZero() || !newest.Before(q.From) {
		return q, time.Time{}
	}
	q.From = newest.UTC().Truncate(time.Minute).Add(time.Minute - defaultOverviewWindow)
	return q, newest
}

// bucketFor picks the narrowest bucket giving at most maxOverviewBuckets over span.
func bucketFor(span time.Duration) int {
	for _, b := range bucketChoices {
		if span <= time.Duration(b*maxOverviewBuckets)*time.Second {
			return b
		}
	}
	return bucketChoices[len(bucketChoices)-1]
}

// pipelineRow is one pipeline in the overview's table.
type pipelineRow struct {
	Total        store.PipelinePoint
	Agreement    *store.Agreement    // nil for the incumbent or without pairs
	Verdict      *suiteVerdict       // the latest suite run that evaluated this candidate, nil if none
	Live         *eval.LiveCandidate // the live verdict of its newest version (eval.LiveVerdicts), nil when never shadowed live
	SeriesClass  string              // colour class of its chart lines
	AgreementPct string              // "87.5%" or "—"
	// CostRatio and P95Ratio are the candidate's cost per request and p95
	// divided by the production incumbent's ("0.62×"), "" for the incumbent.
	CostRatio, P95Ratio string
}

// suiteVerdict is the latest verdict on a candidate.
type suiteVerdict struct {
	SuiteRunID string
	Verdict    string // store.SuiteRun.Verdict, may be empty for older runs
	Headline   string
	StartedAt  time.Time
	// WorseOn lists the segments where that run found the candidate
	// significantly worse after Holm's correction (eval.SignificantSegments).
	WorseOn []string
	// Baseline is that suite's incumbent pipeline (the suite baseline, not
	// necessarily the production incumbent).
	Baseline string
	// Comparison is the candidate's paired comparison and gate verdict in
	// that run's report, nil when the report is unreadable.
	Comparison *eval.CandidateComparison
}

// actionText words a live verdict's recommendation (gate.Action*).
func actionText(action string) string {
	switch action {
	case gate.ActionCutOver:
		return "cut over"
	case gate.ActionDoNotCutOver:
		return "do not cut over"
	case gate.ActionRollBack:
		return "roll back"
	}
	return "keep shadowing"
}

// liveQualityText is a live verdict's quality in one line: the weighted
// difference, its confidence sequence and what it rests on.
func liveQualityText(c *eval.LiveCandidate) string {
	q := c.Quality
	return fmt.Sprintf("quality %+.1f pts %s on %s judged pairs and %s failed runs",
		100*q.Estimate, gate.CSText(q.CS), fmtInt(c.Counts.Judged), fmtInt(c.Counts.Failed))
}

// coverageCellLabel names a coverage cell: "all traffic", "lang:ru",
// "table: yes", "app:bot".
func coverageCellLabel(c gate.CoverageCounts) string {
	switch {
	case c.Dimension == store.CoverageAll:
		return "all traffic"
	case c.Dimension == store.CoverageTable || c.Dimension == store.CoverageCode:
		return c.Dimension + ": " + c.Value
	case c.Value == "":
		return c.Dimension + ": (none)"
	}
	return c.Dimension + ":" + c.Value
}

// coverageText is the shadowed share of a cell's recorded exchanges
// (figure.Coverage), "—" when none was recorded.
func coverageText(c gate.CoverageCounts) string {
	if c.Recorded == 0 {
		return "—"
	}
	return strconv.FormatFloat(100*figure.Coverage(c.Shadowed, c.Recorded), 'f', 1, 64) + "%"
}

// chartSeries is one line of a chart: Points in SVG polyline syntax.
type chartSeries struct {
	Name   string
	Class  string
	Points string
	Dots   [][2]float64 // the points again, drawn as markers (a lone point has no line)
	Dashed bool
}

// chartTick is a labelled axis position in px.
type chartTick struct {
	Pos   float64
	Label string
}

// lineChart is a server-drawn SVG line chart over the overview's window.
type lineChart struct {
	ID, Title, Unit string
	Width, Height   float64
	Series          []chartSeries
	XTicks, YTicks  []chartTick
}

// overviewView is the overview page.
type overviewView struct {
	Meta      pageMeta
	Query     overviewQuery
	Bucket    string
	Data      store.Overview
	Rows      []pipelineRow
	CostChart lineChart
	LatChart  lineChart
	// Histogram, SegChart and CoverageChart are the latency histogram
	// (production incumbent beside each candidate), quality by segment and
	// coverage over time.
	Histogram, SegChart groupChart
	CoverageChart       lineChart
	ThisURL             string // deep link of this exact window
	// Live holds the live verdict of each candidate shown, at its newest
	// version (eval.LiveVerdicts as of now: the window and filters change
	// none), with the window's coverage; nil without a store read.
	Live *eval.LiveSection
	// LiveJudges is each live judge's record on the window's live judgments.
	LiveJudges liveJudgesView
	// Incumbent is the production incumbent's totals, nil without its runs.
	Incumbent *store.PipelinePoint
	// Cutover answers "can we cut over?" per candidate.
	Cutover []cutoverRow
	// Suite is the newest finished suite run, nil without one.
	Suite *latestSuite
	// Followed is the newest stored traffic's receive time when the default
	// window was moved back to it (no traffic in the last 24 h), else zero.
	Followed time.Time
}

// newLineChart draws series of (bucket, value) per pipeline across [from, to).
// value picks the figure; dashed adds a second, dashed line per pipeline.
func newLineChart(id, title, unit string, from, to time.Time, classes map[string]string,
	pts []store.PipelinePoint, lines []struct {
		suffix string
		value  func(store.PipelinePoint) float64
		dashed bool
	}, fmtY func(float64) string) lineChart {
	c := lineChart{ID: id, Title: title, Unit: unit, Width: chartW, Height: chartH}
	span := to.Sub(from).Seconds()
	plotW, plotH := chartW-chartPadL-chartPadR, chartH-chartPadT-chartPadB
	var maxY float64
	for _, p := range pts {
		for _, l := range lines {
			maxY = max(maxY, l.value(p))
		}
	}
	ticks := axisTicks(maxY)
	maxY = ticks[len(ticks)-1]
	x := func(t time.Time) float64 { return chartPadL + plotW*max(0, min(1, t.Sub(from).Seconds()/span)) }
	y := func(v float64) float64 { return chartPadT + plotH*(1-v/maxY) }
	byPipe := map[string][]store.PipelinePoint{}
	var order []string
	for _, p := range pts {
		if _, ok := byPipe[p.Pipeline]; !ok {
			order = append(order, p.Pipeline)
		}
		byPipe[p.Pipeline] = append(byPipe[p.Pipeline], p)
	}
	for _, name := range order {
		for _, l := range lines {
			var b strings.Builder
			var dots [][2]float64
			for i, p := range byPipe[name] {
				if i > 0 {
					b.WriteByte(' ')
				}
				px, py := x(p.Bucket), y(l.value(p))
				b.WriteString(fmtPx(px) + "," + fmtPx(py))
				dots = append(dots, [2]float64{px, py})
			}
			c.Series = append(c.Series, chartSeries{Name: name + l.suffix, Class: classes[name], Points: b.String(),
				Dots: dots, Dashed: l.dashed})
		}
	}
	for _, v := range ticks {
		c.YTicks = append(c.YTicks, chartTick{Pos: y(v), Label: fmtY(v)})
	}
	for k := 0; k <= chartTicks; k++ {
		t := from.Add(time.Duration(float64(to.Sub(from)) * float64(k) / chartTicks))
		c.XTicks = append(c.XTicks, chartTick{Pos: x(t), Label: fmtTickTime(t, to.Sub(from))})
	}
	return c
}

// latestVerdicts maps each candidate to the newest suite run that evaluated it
// and finished (a running or cancelled suite run has no verdict).
func latestVerdicts(runs []store.SuiteRun) map[string]*suiteVerdict {
	out := map[string]*suiteVerdict{}
	slices.SortStableFunc(runs, func(a, b store.SuiteRun) int { return b.StartedAt.Compare(a.StartedAt) })
	for _, r := range runs {
		if r.Status == eval.SuiteStatusRunning || r.Status == eval.SuiteStatusCancelled {
			continue // no verdict: still running, or stopped before the end
		}
		var rep eval.Report
		if r.ReportJSON != "" {
			_ = json.Unmarshal([]byte(r.ReportJSON), &rep) // an unreadable report only loses the segment line
		}
		for _, c := range r.Candidates {
			if _, ok := out[c]; !ok {
				sv := &suiteVerdict{SuiteRunID: r.SuiteRunID, Verdict: r.Verdict, Headline: r.Headline, StartedAt: r.StartedAt,
					Baseline: r.Incumbent}
				for i, cc := range rep.Comparisons {
					if cc.Candidate == c {
						sv.WorseOn, _ = eval.SignificantSegments(cc.Comparison)
						sv.Comparison = &rep.Comparisons[i]
					}
				}
				out[c] = sv
			}
		}
	}
	return out
}

// newOverviewView assembles the page from the store's overview and suite runs.
func newOverviewView(meta pageMeta, q overviewQuery, bucket int, ov store.Overview, suiteRuns []store.SuiteRun, live *eval.LiveSection) overviewView {
	v := overviewView{Meta: meta, Query: q, Data: ov, Live: live,
		Bucket: (time.Duration(bucket) * time.Second).String()}
	classes := map[string]string{}
	for i, p := range ov.Totals {
		classes[p.Pipeline] = "series-" + strconv.Itoa(i%maxSeries)
	}
	agree := map[string]*store.Agreement{}
	for i := range ov.Agreement {
		agree[ov.Agreement[i].Candidate] = &ov.Agreement[i]
	}
	verdicts := latestVerdicts(suiteRuns)
	running := map[string]*eval.LiveCandidate{}
	if live != nil {
		for i := range live.Verdicts {
			running[live.Verdicts[i].Candidate] = &live.Verdicts[i]
		}
	}
	v.Incumbent = productionIncumbent(ov.Totals)
	v.Suite = newestSuite(suiteRuns)
	for _, p := range ov.Totals {
		row := pipelineRow{Total: p, SeriesClass: classes[p.Pipeline], AgreementPct: "—"}
		if p.Mode == store.ModeCandidate {
			v.Cutover = append(v.Cutover, newCutoverRow(p, v.Incumbent, agree[p.Pipeline], verdicts[p.Pipeline], running[p.Pipeline]))
			if v.Incumbent != nil {
				row.CostRatio = fmtRatio(p.CostPerRequestUSD, v.Incumbent.CostPerRequestUSD)
				row.P95Ratio = "—"
				if p.P95Ms > 0 {
					row.P95Ratio = fmtRatio(p.P95Ms, v.Incumbent.P95Ms)
				}
			}
			if a := agree[p.Pipeline]; a != nil && a.Pairs > 0 {
				row.Agreement = a
				row.AgreementPct = strconv.FormatFloat(100*float64(a.Agree)/float64(a.Pairs), 'f', 1, 64) + "%"
			}
			row.Verdict = verdicts[p.Pipeline]
			row.Live = running[p.Pipeline]
		}
		v.Rows = append(v.Rows, row)
	}
	type line = struct {
		suffix string
		value  func(store.PipelinePoint) float64
		dashed bool
	}
	v.CostChart = newLineChart("cost-chart", "Cost per request", "USD", q.From, q.To, classes, ov.Series,
		[]line{{"", func(p store.PipelinePoint) float64 { return p.CostPerRequestUSD }, false}}, fmtTickUSD)
	v.LatChart = newLineChart("latency-chart", "Latency p50 (solid) and p95 (dashed)", "ms", q.From, q.To, classes, ov.Series,
		[]line{{" p50", func(p store.PipelinePoint) float64 { return p.P50Ms }, false},
			{" p95", func(p store.PipelinePoint) float64 { return p.P95Ms }, true}},
		fmtTickMs)
	return v
}

// addCharts draws the latency histogram, quality by segment and coverage
// over time with the pipelines' colours of the other charts.
func (v *overviewView) addCharts(latency []store.LatencyBin, oc store.OverviewCharts) {
	classes := map[string]string{}
	for _, r := range v.Rows {
		classes[r.Total.Pipeline] = r.SeriesClass
	}
	v.Histogram = newLatencyHistogram(latency, classes)
	v.SegChart = newSegmentQuality(v.Cutover, classes)
	v.CoverageChart = coverageLine(v.Query.From, v.Query.To, oc.Coverage)
}

// overview serves GET /overview.
func (s *server) overview(c *gin.Context) {
	now := time.Now()
	q, err := parseOverviewQuery(c.Request.URL.Query(), now)
	if err != nil {
		s.fail(c, http.StatusBadRequest, "Bad query: "+err.Error()+".", nil)
		return
	}
	meta := s.meta("Overview", navOverview)
	if q.Generated {
		meta.Title = "Overview of generated load-test data (not production)"
	}
	an, sr := s.read.Overview, s.read.Suites
	var followed time.Time
	if defaultWindow(c.Request.URL.Query()) {
		newest, err := an.NewestTraffic(c.Request.Context(), q.App)
		if err != nil {
			s.storeFailed(c, "newest traffic", "", fmt.Errorf("web: overview: %w", err))
			return
		}
		q, followed = followData(q, newest) // the page says when the window moved
	}
	bucket := bucketFor(q.To.Sub(q.From))
	ov, err := an.Overview(c.Request.Context(), store.OverviewQuery{App: q.App, From: q.From, To: q.To, BucketSeconds: bucket, Segments: q.Seg, Generated: q.Generated})
	if err != nil {
		s.storeFailed(c, "overview", "", fmt.Errorf("web: overview: %w", err))
		return
	}
	runs, err := sr.ListSuiteRuns(c.Request.Context(), store.MaxListLimit)
	if err != nil {
		s.storeFailed(c, "suite run list", "", err)
		return
	}
	pol := gate.NewDefaultPolicy()
	if s.cfg.GatePolicy != nil {
		pol = *s.cfg.GatePolicy
	}
	var cands []string
	for _, p := range ov.Totals {
		if p.Mode == store.ModeCandidate {
			cands = append(cands, p.Pipeline)
		}
	}
	live := &eval.LiveSection{}
	// Generated load-test rows have no live verdict: they are no production
	// traffic.
	if len(cands) > 0 && !q.Generated {
		// The live verdict of each candidate shown: its sequence since its
		// newest version's shadowing started, as of now; the window only
		// picks the coverage shown next to it.
		live, err = eval.LiveVerdicts(c.Request.Context(), s.read.Live, eval.LiveQuery{Candidates: cands, WindowFrom: q.From, WindowTo: q.To}, pol)
		if err != nil {
			s.storeFailed(c, "live verdicts", "", fmt.Errorf("web: overview: %w", err))
			return
		}
	}
	charts, err := an.OverviewCharts(c.Request.Context(), store.OverviewQuery{App: q.App, From: q.From, To: q.To, BucketSeconds: bucket, Segments: q.Seg, Generated: q.Generated})
	if err != nil {
		s.storeFailed(c, "overview charts", "", fmt.Errorf("web: overview: %w", err))
		return
	}
	v := newOverviewView(meta, q, bucket, ov, runs, live)
	v.Followed = followed
	v.addCharts(ov.Latency, charts)
	v.ThisURL = s.urls().overviewWith(q)
	v.LiveJudges = s.liveJudgesOf(c, q.From, q.To)
	s.render(c, http.StatusOK, overviewPage(v))
}

// overviewWith links to the overview with q's window.
func (u urls) overviewWith(q overviewQuery) string {
	if enc := q.values().Encode(); enc != "" {
		return u.overview() + "?" + enc
	}
	return u.overview()
}

func (u urls) overview() string { return u.base + "/overview" }

// verdictClass maps a suite verdict to a status CSS class.
func verdictClass(v string) string {
	switch strings.ToUpper(v) {
	case "PASS":
		return statusClass(store.StatusOK)
	case "FAIL":
		return statusClass(store.StatusError)
	}
	return statusClass(cmp.Or(v, "unknown"))
}
