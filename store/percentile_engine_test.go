package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/conductor-shadow/conductor-shadow/store/percentile"
)

// TestNearestRankSQLEqualsGo checks on the real engine that percentile.SQL
// gives exactly percentile.NearestRank for p50/p95/p99 (and ranks where p·n is
// a whole number, where ClickHouse's quantileExactLow differs), with and
// without a condition, and 0 for no rows.
func TestNearestRankSQLEqualsGo(t *testing.T) {
	s := openTestStore(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(12, 34))
	ps := []float64{50, 95, 99, 90, 25, 100}
	for _, n := range []int{0, 1, 2, 3, 7, 10, 20, 99, 100, 101, 200, 1000, 1001} {
		vals := make([]float64, n)
		var lits []string
		for i := range vals {
			vals[i] = float64(rng.IntN(5000)) / 4 // repeats and quarter-ms values
			lits = append(lits, strconv.FormatFloat(vals[i], 'g', -1, 64))
		}
		var pos []float64 // the condition keeps values > 100
		for _, v := range vals {
			if v > 100 {
				pos = append(pos, v)
			}
		}
		var cols []string
		for _, p := range ps {
			cols = append(cols, percentile.SQL("x", "", p), percentile.SQL("x", "x > 100", p))
		}
		q := fmt.Sprintf("SELECT %s FROM (SELECT arrayJoin(CAST([%s] AS Array(Float64))) AS x)",
			strings.Join(cols, ", "), strings.Join(lits, ","))
		res, err := s.Query(ctx, q)
		if err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		if len(res.Rows) != 1 {
			t.Fatalf("n=%d: %d rows", n, len(res.Rows))
		}
		for k, p := range ps {
			for j, want := range []float64{percentile.Of(vals, p), percentile.Of(pos, p)} {
				got, err := strconv.ParseFloat(res.Rows[0][2*k+j], 64)
				if err != nil {
					t.Fatalf("n=%d p%v: %v", n, p, err)
				}
				if got != want {
					t.Errorf("n=%d p%v cond=%v: SQL %v, Go %v", n, p, j == 1, got, want)
				}
			}
		}
	}
}
