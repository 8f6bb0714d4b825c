package web

import (
	"math"
	"strconv"
	"strings"
)

// niceNum is Heckbert's "nice number" (Graphics Gems, 1990, "Nice numbers for
// graph labels"): a number of the form 1, 2 or 5 times a power of ten close to
// x, rounded (round) or not below x.
func niceNum(x float64, round bool) float64 {
	if x <= 0 {
		return 1
	}
	exp := math.Floor(math.Log10(x))
	f := x / math.Pow(10, exp)
	var nf float64
	switch {
	case round && f < 1.5:
		nf = 1
	case round && f < 3:
		nf = 2
	case round && f < 7:
		nf = 5
	case round:
		nf = 10
	case f <= 1:
		nf = 1
	case f <= 2:
		nf = 2
	case f <= 5:
		nf = 5
	default:
		nf = 10
	}
	return nf * math.Pow(10, exp)
}

// niceTicks returns about n tick values covering [lo, hi], at a nice step
// (niceNum), from a multiple of the step at or below lo to one at or above
// hi, and the step. lo == hi widens to a unit range around them.
func niceTicks(lo, hi float64, n int) (ticks []float64, step float64) {
	if hi < lo {
		lo, hi = hi, lo
	}
	if hi == lo {
		if lo == 0 {
			hi = 1
		} else {
			lo, hi = lo-math.Abs(lo)/2, hi+math.Abs(hi)/2
		}
	}
	step = niceNum(niceNum(hi-lo, false)/float64(max(1, n-1)), true)
	start := math.Floor(lo/step) * step
	end := math.Ceil(hi/step) * step
	for v := start; v <= end+step/2; v += step {
		// Snap away float noise so 0.30000000000000004 prints as 0.3.
		ticks = append(ticks, math.Round(v/step)*step)
	}
	return ticks, step
}

// stepDecimals is how many decimals show a tick step exactly (0.005 → 3).
func stepDecimals(step float64) int {
	if step <= 0 {
		return 0
	}
	return max(0, int(math.Ceil(-math.Log10(step)-1e-9)))
}

// fmtUSDTick renders a USD tick at the precision of the axis step:
// "$0.005", "-$0.010", "$2".
func fmtUSDTick(v, step float64) string {
	s := strconv.FormatFloat(math.Abs(v), 'f', stepDecimals(step), 64)
	if v < 0 && strings.Trim(s, "0.") != "" {
		return "-$" + s
	}
	return "$" + s
}

// fmtMsTick renders a latency tick: ms below 10 s on the axis ("750 ms"),
// else s at the step's precision ("12.5 s").
func fmtMsTick(v, step float64) string {
	if math.Max(math.Abs(v), step) < 10_000 && step >= 1 {
		return strconv.FormatFloat(v, 'f', 0, 64) + " ms"
	}
	if step < 1 {
		return strconv.FormatFloat(v, 'f', stepDecimals(step), 64) + " ms"
	}
	return strconv.FormatFloat(v/1000, 'f', stepDecimals(step/1000), 64) + " s"
}

// fmtPctTick renders a share (0..1) as a whole percent: "40%".
func fmtPctTick(v, _ float64) string { return strconv.FormatFloat(100*v, 'f', 0, 64) + "%" }

// fmtDeltaUSD renders a difference in USD with its sign and four
// significant digits: "+$0.02162", "−$0.0004".
func fmtDeltaUSD(v float64) string {
	sign := "+"
	if v < 0 {
		sign = "−"
	}
	if v == 0 {
		return "$0"
	}
	return sign + "$" + sigDigits(math.Abs(v), 3)
}

// fmtDeltaMs renders a latency difference with its sign: ms below 10 s,
// else s with one decimal ("+2810 ms", "−12.3 s").
func fmtDeltaMs(v float64) string {
	sign := "+"
	if v < 0 {
		sign = "−"
	}
	a := math.Abs(v)
	switch {
	case a == 0:
		return "0 ms"
	case a >= 10_000:
		return sign + strconv.FormatFloat(a/1000, 'f', 1, 64) + " s"
	}
	return sign + fmtMs(a) + " ms"
}

// sigDigits renders v > 0 with n significant digits, without an exponent.
func sigDigits(v float64, n int) string {
	d := max(0, n-1-int(math.Floor(math.Log10(v))))
	return strconv.FormatFloat(v, 'f', d, 64)
}

// fmtUSDFig renders a cost figure with four significant digits ($0.004500,
// $12.35): cost per request, a step's part.
func fmtUSDFig(v float64) string {
	if v == 0 {
		return "$0"
	}
	if v < 0 {
		return "-$" + sigDigits(-v, 4)
	}
	return "$" + sigDigits(v, 4)
}
