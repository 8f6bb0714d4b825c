package eval

import (
	"fmt"
	"math"
)

// RubricScale is the score range a set declares for its LLM-judge rubric
// cases, in the case's "rubric_scale" field: [min, max] of integers, e.g.
// [1, 10]. A judge's score outside it, or given out of another maximum, is a
// judge error, never clamped or rescaled.
type RubricScale struct {
	Min int `json:"min"`
	Max int `json:"max"`
}

// String is "1..10".
func (s RubricScale) String() string { return fmt.Sprintf("%d..%d", s.Min, s.Max) }

// Value maps a score on the scale to the grade's 0..1 value: score / Max (a
// 1..10 score of 8 is 0.8, as MT-Bench's single-answer grades read).
func (s RubricScale) Value(score float64) float64 { return score / float64(s.Max) }

// RubricScale reads the case's "rubric_scale" field. ok is false when it is
// missing; err says why a present field is not a scale: not two integers,
// min ≥ max, min below 0 or max above 100.
func (c Case) RubricScale() (scale RubricScale, ok bool, err error) {
	v, present := c.Extra["rubric_scale"]
	if !present {
		return RubricScale{}, false, nil
	}
	xs, isList := v.([]any)
	if !isList || len(xs) != 2 {
		return RubricScale{}, true, fmt.Errorf("rubric_scale must be [min, max], got %v", v)
	}
	var ends [2]int
	for i, x := range xs {
		f, isNum := x.(float64)
		if !isNum || f != math.Trunc(f) {
			return RubricScale{}, true, fmt.Errorf("rubric_scale must be two integers, got %v", v)
		}
		ends[i] = int(f)
	}
	scale = RubricScale{Min: ends[0], Max: ends[1]}
	if scale.Min < 0 || scale.Max > 100 || scale.Min >= scale.Max {
		return RubricScale{}, true, fmt.Errorf("rubric_scale [%d, %d]: want 0 ≤ min < max ≤ 100", scale.Min, scale.Max)
	}
	return scale, true, nil
}
