package stats

import (
	"fmt"
	"gonum.org/v1/gonum/stat/distuv"
	"math"
	"testing"
)

// bruteOperating sums every (x, y) cell with Design.Decide: the definition
// Operating's threshold search must match.
func bruteOperating(n int, s Scenario, d Design) OC {
	pc, pi := (s.Discordance+s.Effect)/2, (s.Discordance-s.Effect)/2
	lg := func(x int) float64 { v, _ := math.Lgamma(float64(x) + 1); return v }
	oc := OC{N: n}
	for x := 0; x <= n; x++ {
		for y := 0; x+y <= n; y++ {
			lp := lg(n) - lg(x) - lg(y) - lg(n-x-y) + float64(x)*math.Log(pc) + float64(y)*math.Log(pi) + float64(n-x-y)*math.Log(1-pc-pi)
			p := math.Exp(lp)
			switch d.Decide(x, y, n) {
			case "PASS":
				oc.Pass += p
			case "FAIL":
				oc.Fail += p
			}
		}
	}
	oc.Inconclusive = 1 - oc.Pass - oc.Fail
	return oc
}

func TestOperatingMatchesBruteForce(t *testing.T) {
	for _, tc := range []struct {
		n int
		s Scenario
		d Design
	}{
		{120, Scenario{0.85, 0.2, 0}, Design{0.03, 0, 0.95}},
		{150, Scenario{0.85, 0.2, -0.05}, Design{0.03, 0, 0.95}},
		{200, Scenario{0.7, 0.3, 0.02}, Design{0.05, 0.01, 0.9}},
		{90, Scenario{0.6, 0.4, -0.1}, Design{0.01, 0.01, 0.95}},
	} {
		got, err := Operating(tc.n, tc.s, tc.d)
		if err != nil {
			t.Fatal(err)
		}
		want := bruteOperating(tc.n, tc.s, tc.d)
		if math.Abs(got.Pass-want.Pass) > 1e-9 || math.Abs(got.Fail-want.Fail) > 1e-9 {
			t.Errorf("%+v: Operating %+v, brute force %+v", tc, got, want)
		}
	}
}

// TestPlanTargets: at P = 0.85, D = 0.20 the default three-way design (PASS
// within 3 points, FAIL when significantly worse) needs no more than 1.25× the
// exact McNemar minimum of 658 cases for 80% FAIL on a 5-point drop, and
// reaches the power there; A/A at n = 300 FAILs at most 5%.
func TestPlanTargets(t *testing.T) {
	d := Design{Margin: 0.03, FailAt: 0, Confidence: 0.95}
	drop := Scenario{PIncumbent: 0.85, Discordance: 0.2, Effect: -0.05}
	n, err := Plan(drop, d, 0.8, 100)
	if err != nil {
		t.Fatal(err)
	}
	if n > 658*5/4 {
		t.Errorf("plan for a 5-point drop: %d cases > 1.25 × 658", n)
	}
	at, _ := Operating(n, drop, d)
	before, _ := Operating(n-1, drop, d)
	if at.Fail < 0.8 || before.Fail >= 0.8 {
		t.Errorf("plan %d: P(FAIL) %.4f there, %.4f one case earlier; want the first n reaching 0.8", n, at.Fail, before.Fail)
	}
	aa, _ := Operating(300, Scenario{PIncumbent: 0.85, Discordance: 0.2}, d)
	if aa.Fail > 0.05 || aa.Pass <= 0.05 {
		t.Errorf("A/A at 300: %+v", aa)
	}
	if _, err := Plan(Scenario{0.85, 0.2, -0.03}, Design{0.03, 0.03, 0.95}, 0.8, 0); err == nil {
		t.Error("PASS target at the margin: want error")
	}
	for _, bad := range []Scenario{{0.85, 0.02, -0.05}, {1.2, 0.2, 0}, {0.99, 0.2, 0}} {
		if _, err := Plan(bad, d, 0.8, 0); err == nil {
			t.Errorf("%+v: want error", bad)
		}
	}
}

func TestTango(t *testing.T) {
	// At θ = 0 Tango's statistic is McNemar's z = (x − y)/√(x + y).
	if got, want := TangoZ(30, 12, 300, 0), 18/math.Sqrt(42); math.Abs(got-want) > 1e-12 {
		t.Errorf("Z(0) = %v, want %v", got, want)
	}
	iv := TangoInterval(30, 12, 300, Z95)
	if !iv.Contains(0.06) || iv.Contains(0) || iv.Low > iv.High {
		t.Errorf("interval %v", iv)
	}
	// The bounds solve |Z| = z.
	if math.Abs(TangoZ(30, 12, 300, iv.Low)-Z95) > 1e-6 || math.Abs(TangoZ(30, 12, 300, iv.High)+Z95) > 1e-6 {
		t.Errorf("Z at bounds: %v %v", TangoZ(30, 12, 300, iv.Low), TangoZ(30, 12, 300, iv.High))
	}
	// No discordant pairs still gives an interval of positive width around 0.
	if iv := TangoInterval(0, 0, 50, Z95); iv.Low >= 0 || iv.High <= 0 || iv.Low < -0.1 {
		t.Errorf("no discordant pairs: %v", iv)
	}
}

func TestMeanScoreStratified(t *testing.T) {
	// Two strata whose means differ: the stratified variance leaves the
	// between-strata spread out and is narrower.
	var d []float64
	var st []string
	for i := range 40 {
		d = append(d, 0.2+0.01*float64(i%5))
		st = append(st, "category:a")
		d = append(d, -0.2+0.01*float64(i%5))
		st = append(st, "category:b")
	}
	m, ivS, method := MeanScoreInterval(d, st, Z95)
	_, ivP, plain := MeanScoreInterval(d, nil, Z95)
	if method != MethodMeanScoreStratified || plain != MethodMeanScore || math.Abs(m-0.02) > 1e-12 {
		t.Errorf("methods %s %s mean %v", method, plain, m)
	}
	if ivS.High-ivS.Low >= ivP.High-ivP.Low || !ivS.Contains(m) {
		t.Errorf("stratified %v should be narrower than %v", ivS, ivP)
	}
}

// TestMeanScoreSparseStrata: 2-case categories whose pairs tie, and one
// single-case category, neither collapse the interval to zero width nor
// switch a comparison with large categories off stratification.
func TestMeanScoreSparseStrata(t *testing.T) {
	var d []float64
	var st []string
	for i := range 30 {
		// 30 two-case categories, each pair identical within its category.
		v := 0.1 * float64(i%3-1)
		d = append(d, v, v)
		st = append(st, fmt.Sprintf("category:c%d", i), fmt.Sprintf("category:c%d", i))
	}
	_, iv, method := MeanScoreInterval(d, st, Z95)
	_, plain, _ := MeanScoreInterval(d, nil, Z95)
	if w := iv.High - iv.Low; w < 0.5*(plain.High-plain.Low) || method != MethodMeanScore {
		t.Errorf("2-case strata: %v (%s), unstratified %v", iv, method, plain)
	}
	// Two large categories and one single case: still stratified.
	d, st = nil, nil
	for i := range 60 {
		d = append(d, 0.2+0.1*float64(i%3-1), -0.2+0.1*float64(i%3-1))
		st = append(st, "category:a", "category:b")
	}
	d = append(d, 0.5)
	st = append(st, "category:lone")
	if _, _, method := MeanScoreInterval(d, st, Z95); method != MethodMeanScoreStratified {
		t.Errorf("one single-case category switched the comparison to %s", method)
	}
}

// operatingRef is Operating computed the direct way (a binomial CDF and a
// bisection per discordant count), to check the tracked computation.
func operatingRef(n int, s Scenario, d Design) OC {
	pi := (s.Discordance + s.Effect) / (2 * s.Discordance)
	oc := OC{N: n}
	z := ZFor(d.Confidence)
	kLo, kHi := window(n, s.Discordance)
	for k := kLo; k <= kHi; k++ {
		pk := distuv.Binomial{N: float64(n), P: s.Discordance}.Prob(float64(k))
		xPass := firstX(k, func(x int) bool { return TangoZ(x, k-x, n, -d.Margin) >= z })
		xFail := min(firstX(k, func(x int) bool { return !(TangoZ(x, k-x, n, -d.FailAt) < -z) })-1, xPass-1)
		cdf := func(x int) float64 {
			switch {
			case x < 0:
				return 0
			case x >= k:
				return 1
			}
			return distuv.Binomial{N: float64(k), P: pi}.CDF(float64(x))
		}
		oc.Pass += pk * (1 - cdf(xPass-1))
		oc.Fail += pk * cdf(xFail)
	}
	return oc
}

func TestOperatingMatchesDirect(t *testing.T) {
	for _, n := range []int{50, 300, 709, 2004} {
		for _, s := range []Scenario{{0.85, 0.2, 0}, {0.85, 0.2, -0.05}, {0.9, 0.05, -0.03}, {0.6, 0.4, 0.1}} {
			for _, d := range []Design{{0.03, 0, 0.95}, {0.01, 0.01, 0.95}, {0.05, 0.02, 0.998}} {
				got, err := Operating(n, s, d)
				if err != nil {
					t.Fatal(err)
				}
				want := operatingRef(n, s, d)
				if math.Abs(got.Pass-want.Pass) > 1e-9 || math.Abs(got.Fail-want.Fail) > 1e-9 {
					t.Errorf("n %d %+v %+v: %+v, direct %+v", n, s, d, got, want)
				}
			}
		}
	}
}
