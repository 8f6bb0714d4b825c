package web

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/conductor-shadow/conductor-shadow/eval/shift"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// The plans page's defaults and geometry (px).
const (
	defaultPlanWindow = 7 * 24 * time.Hour
	planDriftTop      = 5  // shapes drawn apart in the drift; the others are "other"
	planGraphs        = 6  // shapes drawn as graphs
	planShapeRows     = 20 // shapes listed
	planBarW          = 520.0
	planBarRowH       = 22.0
	planBarLabelW     = 210.0
	planStackW        = 640.0
	planStackH        = 180.0
	planStackPadL     = 44.0
	planStackPadB     = 22.0
)

// planQuery is the plans page's URL state.
type planQuery struct {
	Pipeline, Version string // the candidate conductor; Version "" picks its newest
	Scope             string // store.PlanScopeProduction (default) or store.PlanScopeSuite
	App               string
	From, To          time.Time // zero: the default window, the 7 days up to the version's last run
	Bucket            string    // "day" (default) or "week"
	Compare           string    // "pipeline@version" to diff against; "" picks the previous version
}

func (q planQuery) values() url.Values {
	v := url.Values{}
	set := func(k, val string) {
		if val != "" {
			v.Set(k, val)
		}
	}
	set("pipeline", q.Pipeline)
	set("version", q.Version)
	if q.Scope != store.PlanScopeProduction {
		set("scope", q.Scope)
	}
	set("app", q.App)
	set("from", fmtFormTime(q.From))
	set("to", fmtFormTime(q.To))
	if q.Bucket != "day" {
		set("bucket", q.Bucket)
	}
	set("compare", q.Compare)
	return v
}

// parsePlanQuery reads pipeline, version, scope (production|suite), app,
// from and to (UTC), bucket (day|week) and compare (pipeline@version).
func parsePlanQuery(v url.Values) (planQuery, error) {
	q := planQuery{Pipeline: strings.TrimSpace(v.Get("pipeline")), Version: strings.TrimSpace(v.Get("version")),
		Scope: cmp.Or(strings.TrimSpace(v.Get("scope")), store.PlanScopeProduction), App: strings.TrimSpace(v.Get("app")),
		Bucket: cmp.Or(strings.TrimSpace(v.Get("bucket")), "day"), Compare: strings.TrimSpace(v.Get("compare"))}
	if q.Scope != store.PlanScopeProduction && q.Scope != store.PlanScopeSuite {
		return q, fmt.Errorf("scope %q must be %s or %s", q.Scope, store.PlanScopeProduction, store.PlanScopeSuite)
	}
	if q.Bucket != "day" && q.Bucket != "week" {
		return q, fmt.Errorf("bucket %q must be day or week", q.Bucket)
	}
	if k := strings.TrimSpace(v.Get("version_key")); k != "" { // the selector: pipeline@version
		p, ver, ok := strings.Cut(k, "@")
		if !ok {
			return q, fmt.Errorf("version_key %q must be pipeline@version", k)
		}
		q.Pipeline, q.Version = p, ver
	}
	if q.Compare != "" && !strings.Contains(q.Compare, "@") {
		return q, fmt.Errorf("compare %q must be pipeline@version", q.Compare)
	}
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
	if !q.From.IsZero() && !q.To.IsZero() && !q.To.After(q.From) {
		return q, errors.New("the window's end must be after its start")
	}
	return q, nil
}

// incumbentWord names the incumbent a scope pairs with: production's
// incumbent serves users, a suite's is the pipeline the suite compares with.
func incumbentWord(scope string) string {
	if scope == store.PlanScopeSuite {
		return "suite incumbent"
	}
	return "production incumbent"
}

// shapeStep is one step of a plan shape (store.PlanShape read back).
type shapeStep struct {
	Worker string
	All    bool
	Access []int
}

// parseShape reads a store.PlanShape back into its steps.
func parseShape(shape string) []shapeStep {
	if shape == "" {
		return nil
	}
	var out []shapeStep
	for _, part := range strings.Split(shape, store.PlanShapeSep) {
		st := shapeStep{Worker: part}
		if i := strings.LastIndexByte(part, '['); i > 0 && strings.HasSuffix(part, "]") {
			acc := part[i+1 : len(part)-1]
			st.Worker = part[:i]
			if acc == "all" {
				st.All = true
			} else {
				for _, s := range strings.Split(acc, ",") {
					if n, err := strconv.Atoi(s); err == nil {
						st.Access = append(st.Access, n)
					}
				}
			}
		}
		out = append(out, st)
	}
	return out
}

// shapeAccessLabel is a shape step's access list for people.
func shapeAccessLabel(s shapeStep) string {
	switch {
	case s.All:
		return "sees all earlier steps"
	case len(s.Access) == 0:
		return "sees no earlier step"
	case len(s.Access) == 1:
		return "sees step " + strconv.Itoa(s.Access[0])
	}
	parts := make([]string, len(s.Access))
	for i, n := range s.Access {
		parts[i] = strconv.Itoa(n)
	}
	return "sees steps " + strings.Join(parts, ", ")
}

// shapeGraph is one plan shape drawn as a layered graph.
type shapeGraph struct {
	ID            string
	Title         string // "#1 · 42.0% of runs"
	Shape         string
	Width, Height float64
	Nodes         []shapeNode
	Edges         []graphEdge
}

// shapeNode is one step of a shape graph; X, Y its box's top left (px).
type shapeNode struct {
	X, Y, W, H float64
	Index      int
	Step       shapeStep
}

// Shape graphs' node size (px): smaller than a trace's.
const (
	shapeNodeW = 150.0
	shapeNodeH = 40.0
)

// newShapeGraph lays out a shape's steps with layoutDAG.
func newShapeGraph(id, title, shape string) shapeGraph {
	steps := parseShape(shape)
	g := shapeGraph{ID: id, Title: title, Shape: shape}
	if len(steps) == 0 {
		return g
	}
	nodes := make([]dagNode, len(steps))
	var edges []dagEdge
	for i, s := range steps {
		for j := range i {
			if s.All || slices.Contains(s.Access, j) {
				edges = append(edges, dagEdge{From: j, To: i})
				g.Edges = append(g.Edges, graphEdge{From: int32(j), To: int32(i), Kind: "access", All: s.All})
			}
		}
	}
	lay := layoutDAG(nodes, edges, shapeNodeW, shapeNodeH, 36, 12, 10)
	g.Width, g.Height = lay.Width, lay.Height
	for i, s := range steps {
		g.Nodes = append(g.Nodes, shapeNode{X: lay.X[i], Y: lay.Y[i], W: shapeNodeW, H: shapeNodeH, Index: i, Step: s})
	}
	for k := range g.Edges {
		g.Edges[k].Path = lay.Paths[k]
	}
	return g
}

// shapeRow is one plan shape in the shapes table.
type shapeRow struct {
	Rank    int
	Stat    store.PlanShapeStat
	Steps   []shapeStep
	Quality string // "win rate 42.0%" or "agreement 81.3%", "—" without either
	QualityN,
	QualityKind string // "judged" or "agreement"
	ShareW  float64 // px of the share bar
	Example string  // a trace of the shape
}

// attrRow is one row of an attribution table.
type attrRow struct {
	Key                 string
	Used                string  // share of the pairs whose candidate ran such a step, "14.0%", "" for no step
	CostPerReq          float64 // its part of the mean difference per request, USD
	LatPerReq           float64 // ms
	CostShare, LatShare string  // of the total difference, "61%"
}

// barChart is a horizontal bar chart of signed values (SVG, px).
type barChart struct {
	ID, Title, Unit string
	Width, Height   float64
	ZeroX           float64
	Bars            []chartBar
	Ticks           []chartTick
	AxisY           float64
}

// chartBar is one bar: Y its row's top; X and W its extent.
type chartBar struct {
	Label    string
	Y, X, W  float64
	Value    string
	Negative bool
}

// newBarChart draws values (label → value) on an axis of nice ticks from
// the smallest (or 0) to the largest (or 0); fmtTick renders a tick at the
// axis step, fmtValue a bar's value.
func newBarChart(id, title, unit string, labels []string, values []float64, fmtTick func(v, step float64) string, fmtValue func(float64) string) barChart {
	c := barChart{ID: id, Title: title, Unit: unit, Width: planBarLabelW + planBarW + 70}
	lo, hi := 0.0, 0.0
	for _, v := range values {
		lo, hi = min(lo, v), max(hi, v)
	}
	ticks, step := niceTicks(lo, hi, 5)
	tlo, thi := ticks[0], ticks[len(ticks)-1]
	x := func(v float64) float64 { return planBarLabelW + planBarW*(v-tlo)/(thi-tlo) }
	c.ZeroX = x(0)
	for i, v := range values {
		x0, x1 := x(min(0, v)), x(max(0, v))
		c.Bars = append(c.Bars, chartBar{Label: truncRunes(labels[i], 32), Y: float64(i) * planBarRowH, X: x0, W: max(x1-x0, 1),
			Value: fmtValue(v), Negative: v < 0})
	}
	c.AxisY = float64(len(values)) * planBarRowH
	for _, t := range ticks {
		c.Ticks = append(c.Ticks, chartTick{Pos: x(t), Label: fmtTick(t, step)})
	}
	c.Height = c.AxisY + 24
	return c
}

// stackChart is a stacked bar chart of shares (0..1) per bucket.
type stackChart struct {
	ID, Title     string
	Width, Height float64
	Columns       []stackColumn
	YTicks        []chartTick
	Legend        []legendItem
}

// stackColumn is one bucket's bar: its segments bottom up.
type stackColumn struct {
	X, W     float64
	Label    string
	Segments []stackSegment
}

// stackSegment is one shape's share of a bucket.
type stackSegment struct {
	Y, H  float64
	Class string
	Title string
}

// legendItem names a series colour.
type legendItem struct {
	Class, Label string
}

// driftRow is one bucket (or version) of the drift table: the top shapes'
// shares and the PSI and chi-square against the row before.
type driftRow struct {
	Label  string
	Runs   int64
	Shares []string // per top shape, then other: "42%"
	PSI    string   // "0.031 stable", "" for the first row
	P      string   // chi-square p-value
	Band   string   // shift.Dimension.Band
}

// planDiffView is the diff of two candidate versions.
type planDiffView struct {
	A, B        store.PlanVersion
	Diff        store.PlanDiff
	ChangedPct  string
	Transitions []transitionRow
	Err         string
}

type transitionRow struct {
	T       store.ShapeTransition
	Share   string // of the requests both ran
	Example string // link to a trace
}

// plansView is the plans page.
type plansView struct {
	Meta       pageMeta
	Query      planQuery
	Versions   []store.PlanPipeline // every conductor version in scope
	Chosen     store.PlanVersion
	From, To   time.Time
	Incumbent  string // "production incumbent" or "suite incumbent"
	Incumbents []string
	Runs       int64
	Shapes     []shapeRow
	MoreShapes int // shapes beyond those listed
	Graphs     []shapeGraph
	// Attribution.
	Attr        store.Attribution
	Headline    string
	LatHeadline string
	ByWorker    []attrRow
	ByStep      []attrRow
	CostBars    barChart
	LatBars     barChart
	MeanCost    float64 // mean cost difference per pair, USD
	MeanLat     float64 // mean latency difference per pair, ms
	// Drift.
	DriftShapes []string // top shapes, then ShapeOther
	DriftRows   []driftRow
	VersionRows []driftRow
	DriftChart  stackChart
	Diff        *planDiffView
	ThisURL     string
}

// versionKey is "pipeline@version" for the selectors.
func versionKey(v store.PlanVersion) string { return v.String() }

// plans serves GET /plans.
func (s *server) plans(c *gin.Context) {
	q, err := parsePlanQuery(c.Request.URL.Query())
	if err != nil {
		s.fail(c, http.StatusBadRequest, "Bad query: "+err.Error()+".", nil)
		return
	}
	ctx := c.Request.Context()
	rd := s.read.Plans
	v := plansView{Meta: s.meta("Plans", navPlans), Query: q, Incumbent: incumbentWord(q.Scope)}
	if v.Versions, err = rd.PlanPipelines(ctx, q.Scope); err != nil {
		s.storeFailed(c, "plan list", "", err)
		return
	}
	if len(v.Versions) == 0 {
		s.render(c, http.StatusOK, plansPage(v))
		return
	}
	chosen, ok := pickVersion(v.Versions, q.Pipeline, q.Version)
	if !ok {
		s.fail(c, http.StatusNotFound, fmt.Sprintf("No runs with plans of %s@%s in the %s scope.", q.Pipeline, q.Version, q.Scope), nil)
		return
	}
	v.Chosen = store.PlanVersion{Pipeline: chosen.Pipeline, Version: chosen.Version}
	v.To, v.From = q.To, q.From
	if v.To.IsZero() {
		v.To = chosen.Last.UTC().Truncate(time.Minute).Add(time.Minute)
	}
	if v.From.IsZero() {
		v.From = v.To.Add(-defaultPlanWindow)
	}
	if !v.To.After(v.From) {
		s.fail(c, http.StatusBadRequest, "Bad query: the window's end must be after its start.", nil)
		return
	}
	pq := store.PlanQuery{Pipeline: chosen.Pipeline, Version: chosen.Version, From: v.From, To: v.To, Scope: q.Scope, App: q.App}
	shapes, err := rd.PlanShapes(ctx, pq)
	if err != nil {
		s.storeFailed(c, "plan shapes", "", err)
		return
	}
	attr, err := rd.PlanAttribution(ctx, pq)
	if err != nil {
		s.storeFailed(c, "plan attribution", "", err)
		return
	}
	bucket := 86400
	if q.Bucket == "week" {
		bucket = 7 * 86400
	}
	all := pq
	all.Version = ""
	drift, err := rd.PlanDrift(ctx, all, bucket, planDriftTop)
	if err != nil {
		s.storeFailed(c, "plan drift", "", err)
		return
	}
	u := s.urls()
	v.setShapes(u, shapes)
	v.setAttribution(attr)
	v.setDrift(drift, chosen.Version, q.Bucket)
	if other, ok := compareWith(v.Versions, v.Chosen, q.Compare); ok {
		d, err := rd.PlanDiff(ctx, pq, other, v.Chosen)
		dv := &planDiffView{A: other, B: v.Chosen, Diff: d}
		if err != nil {
			_ = c.Error(fmt.Errorf("web: plan diff: %w", err))
			dv.Err = "The plan diff could not be read from the store."
		}
		dv.ChangedPct = pct(float64(d.Changed), float64(d.Requests))
		for _, t := range d.Transitions {
			dv.Transitions = append(dv.Transitions, transitionRow{T: t, Share: pct(float64(t.Requests), float64(d.Requests)), Example: u.trace(t.ExampleRequestID)})
		}
		v.Diff = dv
	}
	v.ThisURL = u.plansWith(q)
	s.render(c, http.StatusOK, plansPage(v))
}

// pickVersion finds pipeline@version among vs (sorted by pipeline, newest
// first): an empty pipeline picks the first listed, an empty version the
// pipeline's newest.
func pickVersion(vs []store.PlanPipeline, pipeline, version string) (store.PlanPipeline, bool) {
	for _, p := range vs {
		if (pipeline == "" || p.Pipeline == pipeline) && (version == "" || p.Version == version) {
			return p, true
		}
	}
	return store.PlanPipeline{}, false
}

// compareWith is the version to diff chosen against: compare when it names a
// listed version, else chosen's pipeline's next older version.
func compareWith(vs []store.PlanPipeline, chosen store.PlanVersion, compare string) (store.PlanVersion, bool) {
	if compare != "" {
		p, ver, _ := strings.Cut(compare, "@")
		for _, x := range vs {
			if x.Pipeline == p && x.Version == ver && (store.PlanVersion{Pipeline: p, Version: ver}) != chosen {
				return store.PlanVersion{Pipeline: p, Version: ver}, true
			}
		}
		return store.PlanVersion{}, false
	}
	seen := false
	for _, x := range vs {
		if x.Pipeline != chosen.Pipeline {
			continue
		}
		if seen {
			return store.PlanVersion{Pipeline: x.Pipeline, Version: x.Version}, true
		}
		seen = x.Version == chosen.Version
	}
	return store.PlanVersion{}, false
}

func (v *plansView) setShapes(u urls, shapes []store.PlanShapeStat) {
	for _, st := range shapes {
		v.Runs += st.Runs
	}
	for i, st := range shapes {
		if i == planShapeRows {
			v.MoreShapes = len(shapes) - i
			break
		}
		r := shapeRow{Rank: i + 1, Stat: st, Steps: parseShape(st.Shape), ShareW: 80 * st.Share, Quality: "—"}
		switch {
		case st.Judged > 0:
			r.Quality, r.QualityKind = "win rate "+pct(st.WinRate, 1), "judged"
			r.QualityN = strconv.FormatInt(st.Judged, 10) + " judged"
		case st.Pairs > 0:
			r.Quality, r.QualityKind = "agreement "+pct(float64(st.Agree), float64(st.Pairs)), "agreement"
			r.QualityN = strconv.FormatInt(st.Pairs, 10) + " pairs"
		}
		if st.ExampleRequestID != "" {
			r.Example = u.trace(st.ExampleRequestID)
		}
		v.Shapes = append(v.Shapes, r)
		if i < planGraphs && st.Shape != "" {
			v.Graphs = append(v.Graphs, newShapeGraph("shape-"+strconv.Itoa(i+1),
				fmt.Sprintf("#%d · %s of runs", i+1, pct(st.Share, 1)), st.Shape))
		}
	}
}

// setAttribution turns the store's decomposition into per-request rows, the
// headline and the bar charts.
func (v *plansView) setAttribution(a store.Attribution) {
	v.Attr, v.Incumbents = a, a.Incumbents
	if a.Pairs == 0 {
		return
	}
	n, nl := float64(a.Pairs), float64(max(a.LatencyPairs, 1))
	v.MeanCost, v.MeanLat = a.CostDeltaUSD/n, a.LatencyDeltaMs/nl
	rows := func(rs []store.AttributionRow) []attrRow {
		var out []attrRow
		for _, r := range rs {
			ar := attrRow{Key: r.Key, CostPerReq: r.CostUSD / n, LatPerReq: r.LatencyMs / nl,
				CostShare: signedPct(r.CostUSD, a.CostDeltaUSD), LatShare: signedPct(r.LatencyMs, a.LatencyDeltaMs)}
			if r.Requests > 0 {
				ar.Used = pct(float64(r.Requests), n)
			}
			out = append(out, ar)
		}
		return out
	}
	v.ByWorker, v.ByStep = rows(a.ByWorker), rows(a.ByStep)
	v.Headline = attributionHeadline(v.ByWorker, v.MeanCost, "cost", fmtDeltaUSD)
	byLat := slices.Clone(v.ByWorker)
	slices.SortStableFunc(byLat, func(x, y attrRow) int { return cmp.Compare(math.Abs(y.LatPerReq), math.Abs(x.LatPerReq)) })
	v.LatHeadline = latencyHeadline(byLat, v.MeanLat)
	var labels []string
	var costs, lats []float64
	for _, r := range v.ByWorker {
		labels = append(labels, r.Key)
		costs = append(costs, r.CostPerReq)
		lats = append(lats, r.LatPerReq)
	}
	v.CostBars = newBarChart("cost-bars", "Cost difference per request by worker", "USD", labels, costs, fmtUSDTick, fmtDeltaUSD)
	v.LatBars = newBarChart("latency-bars", "Latency difference per request by worker (critical path)", "ms", labels, lats, fmtMsTick, fmtDeltaMs)
}

// signedPct is part/whole as a whole percent ("61%", "-12%"); "—" for whole 0.
func signedPct(part, whole float64) string {
	if whole == 0 {
		return "—"
	}
	return strconv.FormatFloat(100*part/whole, 'f', 0, 64) + "%"
}

// attributionHeadline says where most of the cost difference comes from:
// the row with the largest part in the difference's direction, and how often
// the conductor chose it.
func attributionHeadline(rows []attrRow, mean float64, what string, fmtV func(float64) string) string {
	if len(rows) == 0 || mean == 0 {
		return ""
	}
	best := -1
	for i, r := range rows {
		if r.CostPerReq*mean > 0 && (best < 0 || math.Abs(r.CostPerReq) > math.Abs(rows[best].CostPerReq)) {
			best = i
		}
	}
	if best < 0 {
		return ""
	}
	r := rows[best]
	dir := "extra"
	if mean < 0 {
		dir = "saved"
	}
	used := ""
	if r.Used != "" {
		used = " on " + r.Used + " of requests"
	}
	return fmt.Sprintf("Most of the %s %s (%s of %s per request, %s) comes from choosing %s%s.",
		dir, what, fmtV(r.CostPerReq), fmtV(mean), r.CostShare, r.Key, used)
}

// latencyHeadline is attributionHeadline for the latency parts (rows sorted
// by the size of their latency part).
func latencyHeadline(rows []attrRow, mean float64) string {
	for _, r := range rows {
		if r.LatPerReq*mean > 0 {
			dir := "extra"
			if mean < 0 {
				dir = "saved"
			}
			return fmt.Sprintf("Most of the %s latency (%s of %s per request, %s of the mean) is spent on the critical path in %s.",
				dir, fmtDeltaMs(r.LatPerReq), fmtDeltaMs(mean), r.LatShare, r.Key)
		}
	}
	return ""
}

// setDrift folds the drift counts into per-bucket shares of the top shapes
// (of the chosen version), per-version shares, PSI and chi-square against the
// row before (eval/shift), and the stacked chart.
func (v *plansView) setDrift(counts []store.ShapeCount, version, bucket string) {
	total := map[string]int64{}
	for _, c := range counts {
		total[c.Shape] += c.Runs
	}
	for sh := range total {
		if sh != store.ShapeOther {
			v.DriftShapes = append(v.DriftShapes, sh)
		}
	}
	slices.SortFunc(v.DriftShapes, func(a, b string) int { return cmp.Or(cmp.Compare(total[b], total[a]), cmp.Compare(a, b)) })
	if total[store.ShapeOther] > 0 {
		v.DriftShapes = append(v.DriftShapes, store.ShapeOther)
	}
	type mix struct {
		label string
		runs  int64
		by    map[string]int64
	}
	fold := func(key func(store.ShapeCount) string, keep func(store.ShapeCount) bool) []mix {
		var out []mix
		idx := map[string]int{}
		for _, c := range counts {
			if !keep(c) {
				continue
			}
			k := key(c)
			i, ok := idx[k]
			if !ok {
				i = len(out)
				idx[k] = i
				out = append(out, mix{label: k, by: map[string]int64{}})
			}
			out[i].runs += c.Runs
			out[i].by[c.Shape] += c.Runs
		}
		return out
	}
	layout := "2006-01-02"
	if bucket == "week" {
		layout = "week of 2006-01-02"
	}
	days := fold(func(c store.ShapeCount) string { return c.Bucket.UTC().Format(layout) },
		func(c store.ShapeCount) bool { return c.Version == version })
	versions := fold(func(c store.ShapeCount) string { return c.Version }, func(store.ShapeCount) bool { return true })
	rows := func(ms []mix) []driftRow {
		var out []driftRow
		for i, m := range ms {
			r := driftRow{Label: m.label, Runs: m.runs}
			for _, sh := range v.DriftShapes {
				r.Shares = append(r.Shares, pct(float64(m.by[sh]), float64(m.runs)))
			}
			if i > 0 {
				ref := map[string]int{}
				for k, n := range ms[i-1].by {
					ref[k] = int(n)
				}
				d := shift.CompareCounts("plan shape", ref, m.by)
				r.PSI, r.Band = strconv.FormatFloat(d.PSI, 'f', 3, 64), d.Band
				r.P = strconv.FormatFloat(d.P, 'g', 3, 64)
			}
			out = append(out, r)
		}
		return out
	}
	v.DriftRows, v.VersionRows = rows(days), rows(versions)
	// The chart: one column per bucket of the chosen version.
	c := stackChart{ID: "drift-chart", Title: "Shares of the top plan shapes per " + bucket, Width: planStackW, Height: planStackH + planStackPadB + 6}
	plotH := planStackH
	colW := (planStackW - planStackPadL) / float64(max(len(days), 1))
	for i, d := range days {
		col := stackColumn{X: planStackPadL + float64(i)*colW + colW*0.15, W: colW * 0.7, Label: d.label}
		y := plotH
		for k, sh := range v.DriftShapes {
			share := float64(d.by[sh]) / float64(max(d.runs, 1))
			h := share * plotH
			y -= h
			col.Segments = append(col.Segments, stackSegment{Y: y, H: h, Class: "series-" + strconv.Itoa(k%maxSeries),
				Title: fmt.Sprintf("%s · %s: %s of %d runs", d.label, sh, pct(share, 1), d.runs)})
		}
		c.Columns = append(c.Columns, col)
	}
	for _, t := range []float64{0, 0.25, 0.5, 0.75, 1} {
		c.YTicks = append(c.YTicks, chartTick{Pos: plotH * (1 - t), Label: fmtPctTick(t, 0.25)})
	}
	for k, sh := range v.DriftShapes {
		c.Legend = append(c.Legend, legendItem{Class: "series-" + strconv.Itoa(k%maxSeries), Label: sh})
	}
	v.DriftChart = c
}

func (u urls) plans() string { return u.base + "/plans" }

// plansWith links to the plans page with q's parameters.
func (u urls) plansWith(q planQuery) string {
	if enc := q.values().Encode(); enc != "" {
		return u.plans() + "?" + enc
	}
	return u.plans()
}

// joinInts renders step indices as "0,2".
func joinInts(ns []int) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, ",")
}

// shapeOrNone is a shape, or what an empty one means.
func shapeOrNone(shape string) string {
	if shape == "" {
		return "(no readable plan)"
	}
	return shape
}
