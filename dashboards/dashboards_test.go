// Package dashboards_test runs every panel query of the shipped Grafana
// dashboards against a real migrated embedded store.
package dashboards_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/store"
	"github.com/conductor-shadow/conductor-shadow/store/percentile"
)

type dashboard struct {
	Title  string `json:"title"`
	Panels []struct {
		Title   string `json:"title"`
		Targets []struct {
			RawSQL string `json:"rawSql"`
		} `json:"targets"`
	} `json:"panels"`
	Templating struct {
		List []struct {
			Name     string `json:"name"`
			Query    string `json:"query"`
			AllValue string `json:"allValue"`
		} `json:"list"`
	} `json:"templating"`
}

var (
	timeFilterRE   = regexp.MustCompile(`\$__timeFilter\((\w+)\)`)
	timeIntervalRE = regexp.MustCompile(`\$__timeInterval\((\w+)\)`)
	variableRE     = regexp.MustCompile(`\$\{(\w+):sqlstring\}`)
)

// expand substitutes the Grafana ClickHouse data source's macros and the
// dashboard variables as Grafana would for the window [from, to) and vars.
func expand(t *testing.T, sql string, from, to time.Time, vars map[string]string) string {
	t.Helper()
	lit := func(tm time.Time) string {
		return "toDateTime64('" + tm.UTC().Format("2006-01-02 15:04:05.000") + "', 3, 'UTC')"
	}
	sql = timeFilterRE.ReplaceAllString(sql, "$1 >= "+lit(from)+" AND $1 < "+lit(to))
	sql = timeIntervalRE.ReplaceAllString(sql, "toStartOfInterval(toDateTime($1), INTERVAL 3600 second)")
	sql = variableRE.ReplaceAllStringFunc(sql, func(m string) string {
		name := variableRE.FindStringSubmatch(m)[1]
		v, ok := vars[name]
		if !ok {
			t.Fatalf("no value for variable %s", name)
		}
		return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
	})
	if strings.Contains(sql, "$") {
		t.Fatalf("unexpanded macro or variable in %s", sql)
	}
	return sql
}

type fixture struct {
	from, to time.Time
	// production runs per pipeline (app "math" and "support"), and suite runs
	// that must not count
	latencies map[string][]float64
}

func seed(t *testing.T, ctx context.Context, st store.Store) fixture {
	t.Helper()
	t0 := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	f := fixture{from: t0.Add(-time.Hour), to: t0.Add(24 * time.Hour), latencies: map[string][]float64{}}
	var reqs []store.Request
	var runs []store.Run
	var steps []store.Step
	for i := range 23 {
		id := fmt.Sprintf("req-%02d", i)
		app := "math"
		if i%3 == 0 {
			app = "support"
		}
		at := t0.Add(time.Duration(i) * 17 * time.Minute)
		reqs = append(reqs, store.Request{RequestID: id, ReceivedAt: at, Source: store.SourceTap, App: app, Input: `[]`})
		for _, p := range []struct {
			name, mode string
			lat, cost  float64
		}{
			{"incumbent:gpt-5", store.ModeIncumbent, float64(800 + 37*i), 0.01},
			{"conductor", store.ModeCandidate, float64(1200 + (i*53)%700), 0.02 + float64(i)/1000},
			{"single:gpt-5", store.ModeCandidate, float64(900 + (i*29)%400), 0.012},
		} {
			lat := p.lat
			if i == 5 {
				lat = 0 // unknown latency: left out of the percentiles
			}
			run := store.Run{RunID: id + "-" + p.name, RequestID: id, Pipeline: p.name, Mode: p.mode, StartedAt: at,
				LatencyMs: lat, Status: store.StatusOK, CostUSD: p.cost}
			if i == 7 && p.name == "conductor" {
				run.Status = store.StatusError
			}
			runs = append(runs, run)
			if lat > 0 {
				f.latencies[p.name] = append(f.latencies[p.name], lat)
			}
			if p.name == "conductor" {
				for k, w := range []string{"qwen3-32b", "gpt-5"} {
					steps = append(steps, store.Step{RunID: run.RunID, Index: int32(k), Role: "worker", Worker: w, StartedAt: at,
						LatencyMs: float64(100*(k+1) + i), CostUSD: 0.001, Status: store.StatusOK})
				}
			}
		}
	}
	// Suite traffic in the same window: expensive and slow, and not production.
	for i := range 5 {
		id := fmt.Sprintf("suite-case-%d", i)
		reqs = append(reqs, store.Request{RequestID: id, ReceivedAt: t0, Source: store.SourceSuite, App: "math", Input: `[]`})
		for _, p := range []string{"incumbent:gpt-5", "conductor"} {
			runs = append(runs, store.Run{RunID: id + p, RequestID: id, SuiteRunID: "sr-1", Pipeline: p, Mode: map[bool]string{true: store.ModeIncumbent, false: store.ModeCandidate}[strings.HasPrefix(p, "incumbent")],
				StartedAt: t0, LatencyMs: 99999, Status: store.StatusOK, CostUSD: 50})
		}
	}
	// Generated load-test rows (loadtest generate) in the same window: no
	// suite run, and not production either.
	for i := range 4 {
		id := fmt.Sprintf("gen-%09d", i)
		reqs = append(reqs, store.Request{RequestID: id, ReceivedAt: t0, Source: store.SourceGenerated, App: "support", Input: `[]`})
		for _, p := range []string{"incumbent:gpt-5", "conductor", "single:gpt-5"} {
			runs = append(runs, store.Run{RunID: id + p, RequestID: id, Pipeline: p, Mode: map[bool]string{true: store.ModeIncumbent, false: store.ModeCandidate}[strings.HasPrefix(p, "incumbent")],
				StartedAt: t0, LatencyMs: 88888, Status: store.StatusError, CostUSD: 40, Generated: true})
		}
	}
	if err := st.InsertRequests(ctx, reqs); err != nil {
		t.Fatal(err)
	}
	if err := st.InsertRuns(ctx, runs); err != nil {
		t.Fatal(err)
	}
	if err := st.InsertSteps(ctx, steps); err != nil {
		t.Fatal(err)
	}
	if err := st.InsertSuiteRuns(ctx, []store.SuiteRun{{SuiteRunID: "sr-1", SetName: "gsm8k", StartedAt: t0, Status: "done", Cases: 5}}); err != nil {
		t.Fatal(err)
	}
	for k := range f.latencies {
		slices.Sort(f.latencies[k])
	}
	return f
}

func num(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("not a number: %q", s)
	}
	return v
}

// Every panel of every dashboard runs on a migrated store, and the per-pipeline
// table agrees with the web overview: production only, the same cost per
// request, and p95/p50 by nearest rank over runs with a known latency.
func TestDashboardPanelsRun(t *testing.T) {
	ctx := context.Background()
	cfg := store.NewDefaultConfig()
	cfg.Path = t.TempDir()
	st, err := store.Open(ctx, cfg)
	if errors.Is(err, store.ErrEngineMissing) {
		t.Skipf("embedded engine unavailable (make libchdb): %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	f := seed(t, ctx, st)

	files, _ := filepath.Glob("*.json")
	if len(files) == 0 {
		t.Fatal("no dashboards")
	}
	all := map[string]string{"app": "__all", "candidate": "__all"}
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var d dashboard
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		vars := map[string]bool{}
		for _, v := range d.Templating.List {
			vars[v.Name] = true
			if v.AllValue != "__all" {
				t.Errorf("%s: variable %s: All must be __all, got %q", file, v.Name, v.AllValue)
			}
			if _, err := st.Query(ctx, v.Query); err != nil {
				t.Errorf("%s: variable %s: %v", file, v.Name, err)
			}
		}
		if !vars["app"] || !vars["candidate"] {
			t.Errorf("%s: want app and candidate variables, have %v", file, vars)
		}
		for _, p := range d.Panels {
			for _, tg := range p.Targets {
				for _, v := range []map[string]string{all, {"app": "support", "candidate": "conductor"}} {
					sql := expand(t, tg.RawSQL, f.from, f.to, v)
					res, err := st.Query(ctx, sql)
					if err != nil {
						t.Errorf("%s: panel %q (%v): %v\n%s", file, p.Title, v, err, sql)
						continue
					}
					if len(res.Rows) == 0 {
						t.Errorf("%s: panel %q (%v) returned no rows", file, p.Title, v)
					}
				}
			}
		}
	}

	// The per-pipeline table of the overview dashboard against the store's overview.
	b, _ := os.ReadFile("conductor-shadow-overview.json")
	var d dashboard
	_ = json.Unmarshal(b, &d)
	var table string
	for _, p := range d.Panels {
		if strings.HasPrefix(p.Title, "Per pipeline") {
			table = p.Targets[0].RawSQL
		}
	}
	// The percentiles are the project's one definition, written by its helper.
	for _, p := range []float64{50, 95} {
		if want := percentile.SQL("latency_ms", "latency_ms > 0", p); !strings.Contains(table, want) {
			t.Errorf("per-pipeline panel does not compute p%v as percentile.SQL does (%s)", p, want)
		}
	}
	res, err := st.Query(ctx, expand(t, table, f.from, f.to, all))
	if err != nil {
		t.Fatal(err)
	}
	ov, err := st.(store.OverviewAnalytics).Overview(ctx, store.OverviewQuery{From: f.from, To: f.to, BucketSeconds: 3600})
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, c := range res.Columns {
		col[c] = i
	}
	if len(res.Rows) != len(ov.Totals) || len(res.Rows) != 3 {
		t.Fatalf("dashboard has %d pipelines, overview %d: %v", len(res.Rows), len(ov.Totals), res.Rows)
	}
	for i, row := range res.Rows {
		tot := ov.Totals[i]
		name := row[col["pipeline"]]
		if name != tot.Pipeline || int64(num(t, row[col["runs"]])) != tot.Runs || int64(num(t, row[col["errors"]])) != tot.Errors {
			t.Errorf("row %v; overview %+v", row, tot)
		}
		if got := num(t, row[col["cost_per_request_usd"]]); math.Abs(got-tot.CostPerRequestUSD) > 1e-12 {
			t.Errorf("%s: cost per request %v on the dashboard, %v on the overview", name, got, tot.CostPerRequestUSD)
		}
		if got, want := num(t, row[col["p95_ms"]]), percentile.NearestRank(f.latencies[name], 95); got != want {
			t.Errorf("%s: p95 %v on the dashboard, nearest rank %v", name, got, want)
		}
		if got, want := num(t, row[col["p50_ms"]]), percentile.NearestRank(f.latencies[name], 50); got != want {
			t.Errorf("%s: p50 %v on the dashboard, nearest rank %v", name, got, want)
		}
	}
	// The requests stat counts production requests only (23: not the suite
	// cases nor the generated rows), as the overview does.
	found := false
	for _, p := range d.Panels {
		if p.Title != "Production requests" {
			continue
		}
		found = true
		res, err := st.Query(ctx, expand(t, p.Targets[0].RawSQL, f.from, f.to, all))
		if err != nil || len(res.Rows) != 1 || res.Rows[0][0] != "23" || ov.Counts.Requests != 23 {
			t.Errorf("requests panel %v (%v), overview %d; want 23", res.Rows, err, ov.Counts.Requests)
		}
	}
	if !found {
		t.Error("no Production requests panel")
	}
	// The app and candidate variables narrow the figures.
	res, err = st.Query(ctx, expand(t, table, f.from, f.to, map[string]string{"app": "support", "candidate": "single:gpt-5"}))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 2 || res.Rows[0][col["pipeline"]] != "incumbent:gpt-5" || res.Rows[1][col["pipeline"]] != "single:gpt-5" || res.Rows[0][col["runs"]] != "8" {
		t.Errorf("app=support candidate=single:gpt-5 gave %v", res.Rows)
	}
}
