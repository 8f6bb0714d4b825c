// Package figure holds the one definition of each figure the platform reports
// — accuracy, cost per request and the latency percentiles p50/p95/p99 — in Go
// and as the equivalent ClickHouse SQL, so suite reports, gates, the overview
// page, the Grafana panels and the load commands compute the same number from
// the same rows. It imports nothing of the project but store/percentile, so the
// store, eval and cmd packages can all use it.
//
//   - Accuracy = passed graded cases / graded cases (a share in [0, 1]). Cases
//     whose grader failed or that a set excludes are not graded and count in
//     neither. 0 when nothing was graded.
//   - Cost per request = total cost (USD) / distinct requests (a suite case is
//     one request; a production request_id is one request), so a request run
//     twice costs twice, never half. 0 for no requests.
//   - pXX latency (ms) = the nearest-rank percentile (store/percentile: Hyndman
//     & Fan 1996 definition 1, the value at rank ⌈p/100 · n⌉) over the runs with
//     a known latency. A latency of 0 (or below) means unknown — a run that was
//     never timed, such as one cancelled before it started — and is left out
//     everywhere; no known latency gives 0.
//   - Position consistency = judged pairs whose two orders agree / judged
//     pairs: of the pairwise judgments asked in both orders (incumbent's
//     answer first, then the candidate's) that gave a verdict in both, the
//     share where both orders chose the same answer or both said tie (Zheng
//     et al. 2023, "Judging LLM-as-a-Judge with MT-Bench and Chatbot Arena",
//     Table 2 "consistency"). Judgments that failed and canaries are in
//     neither count. 0 when nothing was judged.
//   - Coverage = exchanges that reached a stage / exchanges of the stage
//     before it, per window and segment: shadowed / recorded (recorded =
//     request rows of production traffic, shadowed = those with a candidate
//     run that was neither cancelled nor skipped), judged / answered (both
//     sides answered). 0 when the earlier stage is empty (coverage.go).
package figure

import (
	"fmt"

	"github.com/conductor-shadow/conductor-shadow/store/percentile"
)

// Accuracy returns passed / graded, the share of graded cases that passed
// (0..1); 0 when graded is 0.
func Accuracy(passed, graded int) float64 {
	if graded <= 0 {
		return 0
	}
	return float64(passed) / float64(graded)
}

// AccuracySQL returns a ClickHouse aggregate expression for Accuracy over the
// rows of a group: passedCond and gradedCond are boolean SQL expressions of one
// row (a passed row must also be graded; passedCond is AND-ed with
// gradedCond). The result is Float64, 0 when no row is graded.
func AccuracySQL(passedCond, gradedCond string) string {
	return fmt.Sprintf("if(countIf(%[2]s) = 0, 0, countIf((%[1]s) AND (%[2]s)) / countIf(%[2]s))", passedCond, gradedCond)
}

// CostPerRequest returns totalUSD / requests (USD per distinct request); 0 when
// requests is 0.
func CostPerRequest(totalUSD float64, requests int) float64 {
	if requests <= 0 {
		return 0
	}
	return totalUSD / float64(requests)
}

// CostPerRequestSQL returns a ClickHouse aggregate expression for
// CostPerRequest over the rows of a group: sum(costExpr) /
// uniqExact(requestExpr), 0 for an empty group.
func CostPerRequestSQL(costExpr, requestExpr string) string {
	return fmt.Sprintf("if(uniqExact(%[2]s) = 0, 0, sum(%[1]s) / uniqExact(%[2]s))", costExpr, requestExpr)
}

// KnownLatency reports whether a run's latency (ms) is known: above 0.
func KnownLatency(ms float64) bool { return ms > 0 }

// Latency returns the nearest-rank p-th percentile (0 < p ≤ 100) of the known
// latencies (ms) among ms, in any order; ms is not modified. 0 when none is
// known.
func Latency(ms []float64, p float64) float64 { return Latencies(ms, p)[0] }

// Latencies returns Latency(ms, p) for each of ps, by selection over one
// copy of the known latencies (percentile.NearestRanks).
func Latencies(ms []float64, ps ...float64) []float64 {
	known := make([]float64, 0, len(ms))
	for _, v := range ms {
		if KnownLatency(v) {
			known = append(known, v)
		}
	}
	return percentile.NearestRanks(known, ps...)
}

// LatencySQL returns a ClickHouse aggregate expression for Latency over the
// rows of a group, expr being the latency column (ms): percentile.SQL over the
// rows where expr > 0.
func LatencySQL(expr string, p float64) string {
	return percentile.SQL(expr, expr+" > 0", p)
}

// PositionConsistency returns consistent / judged, the share of pairs judged
// in both orders whose orders agree (0..1); 0 when judged is 0.
func PositionConsistency(consistent, judged int) float64 {
	if judged <= 0 {
		return 0
	}
	return float64(consistent) / float64(judged)
}

// PositionConsistencySQL returns a ClickHouse aggregate expression for
// PositionConsistency over the rows of a group: consistentCond and judgedCond
// are boolean SQL expressions of one judgment row (consistentCond is AND-ed
// with judgedCond). Float64, 0 when no row is judged.
func PositionConsistencySQL(consistentCond, judgedCond string) string {
	return fmt.Sprintf("if(countIf(%[2]s) = 0, 0, countIf((%[1]s) AND (%[2]s)) / countIf(%[2]s))", consistentCond, judgedCond)
}

// CoverageSQL returns a ClickHouse aggregate expression for Coverage over
// the rows of a group: the share of rows where partCond (a boolean SQL
// expression of one row) holds. Float64, 0 for an empty group.
func CoverageSQL(partCond string) string {
	return fmt.Sprintf("if(count() = 0, 0, countIf(%s) / count())", partCond)
}
