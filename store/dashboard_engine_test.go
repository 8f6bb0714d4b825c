package store

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/store/figure"
)

// dashboardPanel is what the test reads of a Grafana panel.
type dashboardPanel struct {
	Title       string `json:"title"`
	Description string `json:"description"`
	Targets     []struct {
		RawSQL string `json:"rawSql"`
	} `json:"targets"`
}

// TestDashboardsUseTheOneDefinitions runs every Grafana panel's SQL on the
// real engine and checks the figures shared with the overview page: p95 is
// the nearest rank (no approximate quantile unless the panel says
// "approximate") and cost per request is per request, equal to Go's figures
// on the same runs.
func TestDashboardsUseTheOneDefinitions(t *testing.T) {
	files, err := filepath.Glob("../dashboards/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no dashboards: %v", err)
	}
	s := openTestStore(t)
	ctx := context.Background()
	// Production runs of two pipelines in one hour; each conductor request has
	// two runs (a retry), so the average per run differs from per request.
	rng := rand.New(rand.NewPCG(5, 6))
	hour := time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)
	var runs []Run
	lat := map[string][]float64{}
	cost := map[string]float64{}
	reqs := map[string]map[string]bool{}
	for i := range 97 {
		for _, p := range []string{"incumbent:gpt-5", "conductor"} {
			k := 1
			if p == "conductor" {
				k = 2
			}
			for j := range k {
				r := Run{RunID: fmt.Sprintf("%s-%d-%d", p, i, j), RequestID: fmt.Sprintf("req-%d", i), Pipeline: p, Mode: ModeCandidate,
					StartedAt: hour.Add(time.Duration(i) * time.Second), LatencyMs: float64(rng.IntN(4000)+1) / 2, Status: StatusOK,
					CostUSD: float64(rng.IntN(1000)) / 1e5}
				if i%11 == 0 {
					r.LatencyMs = 0 // unknown: left out of p95
				}
				runs = append(runs, r)
				lat[p] = append(lat[p], r.LatencyMs)
				cost[p] += r.CostUSD
				if reqs[p] == nil {
					reqs[p] = map[string]bool{}
				}
				reqs[p][r.RequestID] = true
			}
		}
	}
	if err := s.InsertRuns(ctx, runs); err != nil {
		t.Fatal(err)
	}
	timeFilter := regexp.MustCompile(`\$__timeFilter\([^)]*\)`)
	timeInterval := regexp.MustCompile(`\$__timeInterval\(([^)]*)\)`)
	variable := regexp.MustCompile(`\$\{\w+:sqlstring\}`)
	approx := regexp.MustCompile(`\bquantile(TDigest|Timing|BFloat16|DD)?(If)?\(`)
	checked := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var d struct {
			Panels []dashboardPanel `json:"panels"`
		}
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, p := range d.Panels {
			for _, tg := range p.Targets {
				if approx.MatchString(tg.RawSQL) && !strings.Contains(strings.ToLower(p.Title+p.Description), "approximate") {
					t.Errorf("%s: panel %q uses an approximate quantile without saying so", f, p.Title)
				}
				if strings.Contains(tg.RawSQL, "avg(cost_usd)") {
					t.Errorf("%s: panel %q averages cost per run, not per request", f, p.Title)
				}
				// The panels' other macros and the variables at "All", as Grafana expands them.
				sql := timeFilter.ReplaceAllString(strings.ReplaceAll(tg.RawSQL, "shadow.", s.db+"."), "1")
				sql = timeInterval.ReplaceAllString(sql, "toStartOfHour($1)")
				sql = variable.ReplaceAllString(sql, "'__all'")
				res, err := s.Query(ctx, sql)
				if err != nil {
					t.Errorf("%s: panel %q: %v", f, p.Title, err)
					continue
				}
				col, pipeCol := -1, -1
				for i, c := range res.Columns {
					switch c {
					case "p95_ms", "usd_per_request", "cost_per_request_usd":
						col = i
					case "pipeline":
						pipeCol = i
					}
				}
				if col < 0 || pipeCol < 0 || !strings.Contains(sql, "runs FINAL WHERE 1") {
					continue
				}
				for _, row := range res.Rows {
					got, _ := strconv.ParseFloat(row[col], 64)
					pipe := row[pipeCol]
					want := figure.Latency(lat[pipe], 95)
					if res.Columns[col] != "p95_ms" {
						want = figure.CostPerRequest(cost[pipe], len(reqs[pipe]))
					}
					if math.Abs(got-want) > 1e-9 {
						t.Errorf("%s: panel %q, %s: %s = %v, want %v", f, p.Title, pipe, res.Columns[col], got, want)
					}
					checked++
				}
			}
		}
	}
	if checked < 4 {
		t.Errorf("checked %d panel figures, want the p95 and cost per request of both pipelines", checked)
	}
}
