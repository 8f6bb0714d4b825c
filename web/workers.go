package web

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/conductor-shadow/conductor-shadow/store"
)

// workerRow is one worker's share of the selected runs' workflow steps.
type workerRow struct {
	Worker     string
	Steps      int64
	CostUSD    float64
	LatencyMs  float64
	StepShare  string           // of all counted steps, "12.5%"
	CostShare  string           // of their summed cost
	LatShare   string           // of their summed latency
	Positions  map[string]int64 // store.Position* → steps
	Categories string           // "math 3, qa 1", most used first
}

// workersView is the worker analytics page.
type workersView struct {
	Meta      pageMeta
	Query     overviewQuery
	Pipeline  string
	Rows      []workerRow // most used first
	Positions []string    // the position columns in plan order
	ThisURL   string
}

// pct renders part/whole as a percentage with one decimal, "—" when whole is 0.
func pct(part, whole float64) string {
	if whole == 0 {
		return "—"
	}
	return strconv.FormatFloat(100*part/whole, 'f', 1, 64) + "%"
}

// maxWorkerCategories is how many of a worker's categories its row names (most
// steps first); the others are summed as "N more categories STEPS", so traffic
// with hundreds of categories keeps the table readable.
const maxWorkerCategories = 8

// newWorkerRows folds WorkerUsage rows into one row per worker with shares.
func newWorkerRows(uses []store.WorkerUse) []workerRow {
	byWorker := map[string]*workerRow{}
	cats := map[string]map[string]int64{}
	var steps, cost, lat float64
	for _, u := range uses {
		r := byWorker[u.Worker]
		if r == nil {
			r = &workerRow{Worker: u.Worker, Positions: map[string]int64{}}
			byWorker[u.Worker] = r
			cats[u.Worker] = map[string]int64{}
		}
		r.Steps += u.Steps
		r.CostUSD += u.CostUSD
		r.LatencyMs += u.LatencyMs
		r.Positions[u.Position] += u.Steps
		cats[u.Worker][cmp.Or(u.Category, "(none)")] += u.Steps
		steps += float64(u.Steps)
		cost += u.CostUSD
		lat += u.LatencyMs
	}
	var out []workerRow
	for _, r := range byWorker {
		r.StepShare, r.CostShare, r.LatShare = pct(float64(r.Steps), steps), pct(r.CostUSD, cost), pct(r.LatencyMs, lat)
		type kv struct {
			k string
			n int64
		}
		var cs []kv
		for k, n := range cats[r.Worker] {
			cs = append(cs, kv{k, n})
		}
		slices.SortFunc(cs, func(a, b kv) int { return cmp.Or(cmp.Compare(b.n, a.n), strings.Compare(a.k, b.k)) })
		var parts []string
		var rest, restSteps int64
		for i, c := range cs {
			if i >= maxWorkerCategories {
				rest++
				restSteps += c.n
				continue
			}
			parts = append(parts, c.k+" "+strconv.FormatInt(c.n, 10))
		}
		if rest > 0 {
			parts = append(parts, fmt.Sprintf("%d more categories %d", rest, restSteps))
		}
		r.Categories = strings.Join(parts, ", ")
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b workerRow) int {
		return cmp.Or(cmp.Compare(b.Steps, a.Steps), strings.Compare(a.Worker, b.Worker))
	})
	return out
}

func (u urls) workers() string { return u.base + "/workers" }

// workersWith links to the worker page with q's window and pipeline.
func (u urls) workersWith(q overviewQuery, pipeline string) string {
	v := q.values()
	if pipeline != "" {
		v.Set("pipeline", pipeline)
	}
	if enc := v.Encode(); enc != "" {
		return u.workers() + "?" + enc
	}
	return u.workers()
}

// workers serves GET /workers.
func (s *server) workers(c *gin.Context) {
	q, err := parseOverviewQuery(c.Request.URL.Query(), time.Now())
	if err != nil {
		s.fail(c, http.StatusBadRequest, "Bad window: "+err.Error()+".", nil)
		return
	}
	v := workersView{Meta: s.meta("Workers", navWorkers), Query: q, Pipeline: strings.TrimSpace(c.Query("pipeline")),
		Positions: []string{store.PositionFirst, store.PositionMiddle, store.PositionFinal, store.PositionOnly}}
	uses, err := s.read.Workers.WorkerUsage(c.Request.Context(), store.WorkerQuery{App: q.App, Pipeline: v.Pipeline, From: q.From, To: q.To})
	if err != nil {
		s.storeFailed(c, "worker usage", "", fmt.Errorf("web: workers: %w", err))
		return
	}
	v.Rows = newWorkerRows(uses)
	v.ThisURL = s.urls().workersWith(q, v.Pipeline)
	s.render(c, http.StatusOK, workersPage(v))
}
