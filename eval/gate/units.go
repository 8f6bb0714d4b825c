package gate

import (
	"fmt"

	"github.com/conductor-shadow/conductor-shadow/eval/stats"
)

// JudgeScale is the rubric judge's scale: a case's continuous score is the
// judge's 1–10 score / JudgeScale (eval/judge), so a difference of 0.03 in
// score units is 0.3 points on 1–10.
const JudgeScale = 10

// ScoreUnits reports whether method compares continuous judge scores (its
// differences are read as points on 1–10) rather than pass/fail grades
// (accuracy points).
func ScoreUnits(method string) bool {
	switch method {
	case stats.MethodMeanScore, stats.MethodMeanScoreStratified, stats.MethodPairedT, stats.MethodPairedTStratified:
		return true
	}
	return false
}

// DiffText renders a 0..1 difference in the unit of method: signed accuracy
// points ("-1.3 pts") for pass/fail grades, signed points on the judge's
// 1–10 scale ("-0.13 points on 1–10") for judge scores.
func DiffText(method string, f float64) string {
	f += 0 // −0 prints as +0.0
	if ScoreUnits(method) {
		return fmt.Sprintf("%+.2f points on 1–10", JudgeScale*f)
	}
	return fmt.Sprintf("%+.1f pts", 100*f)
}

// MarginText renders a margin given in policy points (0..100) in the unit of
// method: "3 pts" for pass/fail grades, "0.3 points on 1–10" for judge
// scores (margin_points / 10).
func MarginText(method string, points float64) string {
	if ScoreUnits(method) {
		return fmt.Sprintf("%.2g points on 1–10", points*JudgeScale/100)
	}
	return fmt.Sprintf("%g pts", points)
}
