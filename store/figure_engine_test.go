package store

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/store/figure"
)

// TestFiguresSQLMatchesGo computes accuracy, cost per request and p50/p95/p99
// on the same rows in the real engine (store/figure's SQL, and the overview,
// its user) and in Go (store/figure's functions), and requires the same
// numbers. The rows hold what makes the definitions differ: requests run more
// than once, runs of unknown latency (0), ungraded scores.
func TestFiguresSQLMatchesGo(t *testing.T) {
	s := openTestStore(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(12, 4))
	hour := time.Date(2026, 5, 2, 10, 0, 0, 0, time.UTC)
	type agg struct {
		lat          []float64
		cost         float64
		reqs         map[string]bool
		passed, grad int
	}
	want := map[string]*agg{}
	var runs []Run
	var scores []Score
	for i := range 151 {
		for _, p := range []string{"incumbent:gpt-5", "conductor"} {
			a := want[p]
			if a == nil {
				a = &agg{reqs: map[string]bool{}}
				want[p] = a
			}
			k := 1 + rng.IntN(3) // a request run up to three times
			for j := range k {
				lat := float64(rng.IntN(9000)+1) / 4
				if rng.IntN(7) == 0 {
					lat = 0 // unknown
				}
				r := Run{RunID: fmt.Sprintf("%s-%d-%d", p, i, j), RequestID: fmt.Sprintf("req-%d", i), Pipeline: p,
					Mode: ModeCandidate, StartedAt: hour.Add(time.Duration(i) * time.Second), LatencyMs: lat,
					Status: StatusOK, CostUSD: float64(rng.IntN(5000)) / 1e6}
				runs = append(runs, r)
				a.lat = append(a.lat, lat)
				a.cost += r.CostUSD
				a.reqs[r.RequestID] = true
				sc := Score{SuiteRunID: "s1", RunID: r.RunID, RequestID: r.RequestID, CaseID: r.RequestID, Pipeline: p,
					Grader: "exact", Passed: rng.IntN(3) > 0, CreatedAt: hour}
				if rng.IntN(9) == 0 {
					sc.Error = "grader failed"
				}
				if sc.Error == "" {
					a.grad++
					if sc.Passed {
						a.passed++
					}
				}
				scores = append(scores, sc)
			}
		}
	}
	if err := s.InsertRuns(ctx, runs); err != nil {
		t.Fatal(err)
	}
	if err := s.InsertScores(ctx, scores); err != nil {
		t.Fatal(err)
	}
	ov, err := s.Overview(ctx, OverviewQuery{From: hour, To: hour.Add(time.Hour), BucketSeconds: 3600})
	if err != nil {
		t.Fatal(err)
	}
	if len(ov.Totals) != 2 {
		t.Fatalf("overview totals: %+v", ov.Totals)
	}
	for _, p := range ov.Totals {
		a := want[p.Pipeline]
		for _, c := range []struct {
			name      string
			got, want float64
		}{
			{"overview cost per request", p.CostPerRequestUSD, figure.CostPerRequest(a.cost, len(a.reqs))},
			{"overview p50", p.P50Ms, figure.Latency(a.lat, 50)},
			{"overview p95", p.P95Ms, figure.Latency(a.lat, 95)},
		} {
			if math.Abs(c.got-c.want) > 1e-12 {
				t.Errorf("%s %s = %v, Go %v", p.Pipeline, c.name, c.got, c.want)
			}
		}
	}
	// The definitions' SQL directly, p99 and accuracy included.
	res, err := s.Query(ctx, fmt.Sprintf(`SELECT r.pipeline AS pipeline, %s AS cpr, %s AS p50, %s AS p95, %s AS p99
FROM %s.runs AS r FINAL GROUP BY pipeline ORDER BY pipeline`,
		figure.CostPerRequestSQL("r.cost_usd", "r.request_id"), figure.LatencySQL("r.latency_ms", 50),
		figure.LatencySQL("r.latency_ms", 95), figure.LatencySQL("r.latency_ms", 99), s.db))
	if err != nil {
		t.Fatal(err)
	}
	acc, err := s.Query(ctx, fmt.Sprintf(`SELECT pipeline, %s AS accuracy FROM %s.scores FINAL GROUP BY pipeline ORDER BY pipeline`,
		figure.AccuracySQL("passed", "error = ''"), s.db))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 2 || len(acc.Rows) != 2 {
		t.Fatalf("rows: %v / %v", res.Rows, acc.Rows)
	}
	num := func(v string) float64 {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			t.Fatalf("not a number: %q", v)
		}
		return f
	}
	for i, row := range res.Rows {
		a := want[row[0]]
		for k, c := range []struct {
			name string
			want float64
		}{
			{"cost per request", figure.CostPerRequest(a.cost, len(a.reqs))},
			{"p50", figure.Latency(a.lat, 50)},
			{"p95", figure.Latency(a.lat, 95)},
			{"p99", figure.Latency(a.lat, 99)},
		} {
			if got := num(row[k+1]); math.Abs(got-c.want) > 1e-12 {
				t.Errorf("%s SQL %s = %v, Go %v", row[0], c.name, got, c.want)
			}
		}
		if acc.Rows[i][0] != row[0] {
			t.Fatalf("pipelines out of step: %v / %v", acc.Rows, res.Rows)
		}
		if got, w := num(acc.Rows[i][1]), figure.Accuracy(a.passed, a.grad); math.Abs(got-w) > 1e-12 {
			t.Errorf("%s SQL accuracy = %v, Go %v", row[0], got, w)
		}
	}
}
