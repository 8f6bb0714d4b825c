package figure

import "fmt"

// WinRate returns the judged win rate: wins / judged pairs (0..1), each pair
// weighted by the inverse of its inclusion probability (Horvitz–Thompson, as
// the live judged sample is drawn; the ratio of the two weighted sums is the
// Hájek estimator). A win is a pair both orders preferred the candidate on
// (eval's pairwise judging); ties, losses and inconsistent pairs are judged
// pairs that are no win; errors, unjudged pairs and canaries count in neither.
// 0 when nothing was judged.
func WinRate(weightedWins, weightedJudged float64) float64 {
	if weightedJudged <= 0 {
		return 0
	}
	return weightedWins / weightedJudged
}

// WinRateSQL returns a ClickHouse aggregate expression for WinRate over the
// rows of a group: winCond and judgedCond are boolean SQL expressions of one
// judgment row (winCond is AND-ed with judgedCond), probExpr its inclusion
// probability (a row with none counts with weight 1). Float64, 0 when no row is
// judged.
func WinRateSQL(winCond, judgedCond, probExpr string) string {
	w := fmt.Sprintf("if(%[1]s > 0, 1 / %[1]s, 1)", probExpr)
	return fmt.Sprintf("if(sumIf(%[3]s, %[2]s) <= 0, 0, sumIf(%[3]s, (%[1]s) AND (%[2]s)) / sumIf(%[3]s, %[2]s))", winCond, judgedCond, w)
}
