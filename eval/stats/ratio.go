package stats

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/conductor-shadow/conductor-shadow/store/figure"
	"github.com/conductor-shadow/conductor-shadow/store/percentile"
)

// RatioTest is a ratio of a candidate figure over the incumbent's (cost per
// request, p95 latency) with its standard error on the log scale: the gates'
// Wald test of log ratio, log R̂ ± z·SE. LogSE is 0 for a degenerate ratio
// (a zero mean, identical values) and −1 when there are too few observations
// for the test (the interval is then [0, MaxRatio]).
type RatioTest struct {
	Ratio float64 `json:"ratio"`
	LogSE float64 `json:"log_se"`
	// N is the number of paired cases the standard error is over (for the
	// p95, the smaller side's count of known latencies).
	N int `json:"n"`
}

// Interval is the Wald interval exp(log R̂ ± z·LogSE).
func (r RatioTest) Interval(z float64) Interval {
	switch {
	case r.LogSE < 0:
		return Interval{0, MaxRatio}
	case r.Ratio <= 0 || r.Ratio >= MaxRatio:
		return Interval{r.Ratio, r.Ratio}
	}
	l := math.Log(r.Ratio)
	return Interval{Low: math.Exp(l - z*r.LogSE), High: math.Min(MaxRatio, math.Exp(l+z*r.LogSE))}
}

// SpreadPerCase is LogSE·√N, the per-case standard deviation of the log
// ratio's influence values: the figure a plan scales by 1/√n (0 when
// degenerate, −1 when there were too few observations).
func (r RatioTest) SpreadPerCase() float64 {
	if r.LogSE < 0 {
		return -1
	}
	return r.LogSE * math.Sqrt(float64(r.N))
}

// CostRatioTest is the paired test of the ratio of mean costs (cost per
// request, USD) over the cases idx, candidate over incumbent, by the delta
// method on the log scale (Deng, Knoblich & Lu 2018, "Applying the delta
// method in metric analytics", KDD): each case's influence on log R̂ is
// ψ_j = c_j/c̄ − i_j/ī, so SE(log R̂) = sd(ψ)/√n. Pairing enters through the
// per-case difference: a request both sides find expensive moves neither's
// share. A side with mean 0 gives the ratio of figure.CostPerRequest's
// convention (MaxRatio, or 1 for 0/0) with SE 0.
func CostRatioTest(inc, cand []Obs, idx []int) RatioTest {
	n := len(idx)
	r := RatioTest{N: n}
	var si, sc float64
	for _, i := range idx {
		si += inc[i].CostUSD
		sc += cand[i].CostUSD
	}
	r.Ratio = ratio(sc, si)
	if n < 2 || si <= 0 || sc <= 0 {
		return r
	}
	mi, mc := si/float64(n), sc/float64(n)
	psi := make([]float64, n)
	for k, i := range idx {
		psi[k] = cand[i].CostUSD/mc - inc[i].CostUSD/mi
	}
	r.LogSE = sd(psi) / math.Sqrt(float64(n))
	return r
}

// MinQuantileN is the fewest known latencies per side the p95 ratio test
// uses: below it the p95 rests on the one or two slowest runs and its
// interval is [0, MaxRatio] (INCONCLUSIVE).
const MinQuantileN = 20

// QuantileRatioTest is the paired test of the ratio of the p-th latency
// percentiles (nearest rank, figure.Latency; known latencies only), candidate
// over incumbent, over the cases idx. Its standard error on the log scale
// comes from Bahadur's (1966) representation of a sample quantile, q̂ − q ≈
// −(F̂(q) − p)/f(q) (Ann. Math. Statist. 37:577–580): each run's influence on
// log q̂ is −(1{x ≤ q̂} − p)·s/q̂, s = 1/f(q) the sparsity, estimated from
// the order statistics around the quantile (Siddiqui 1960; Bloch & Gastwirth
// 1968) with Hall & Sheather's (1988) bandwidth, as in Koenker (2005),
// "Quantile Regression", §3.4. The two sides' influences are combined over
// the cases where both are known, so the covariance of paired runs (a long
// request is slow on both sides) narrows the interval:
//
//	Var(log R̂) = V_c/n_c + V_i/n_i − 2·Σ_both ψ_c,j ψ_i,j /(n_c n_i).
//
// Fewer than MinQuantileN known latencies on a side give LogSE −1.
func QuantileRatioTest(inc, cand []Obs, idx []int, p float64) RatioTest {
	qi, psiI, knownI, ni := quantileInfluence(inc, idx, p)
	qc, psiC, knownC, nc := quantileInfluence(cand, idx, p)
	r := RatioTest{Ratio: ratio(qc, qi), N: min(ni, nc)}
	switch {
	case ni < MinQuantileN || nc < MinQuantileN:
		r.LogSE = -1
		return r
	case qi <= 0 || qc <= 0:
		return r
	}
	var vi, vc, cov float64
	for k := range idx {
		vi += psiI[k] * psiI[k]
		vc += psiC[k] * psiC[k]
		if knownI[k] && knownC[k] {
			cov += psiI[k] * psiC[k]
		}
	}
	fi, fc := float64(ni), float64(nc)
	v := vc/(fc*fc) + vi/(fi*fi) - 2*cov/(fc*fi)
	r.LogSE = math.Sqrt(math.Max(v, 0))
	return r
}

// quantileInfluence returns the p-th nearest-rank percentile q̂ of obs over
// idx (known latencies only) and, per position of idx, the centred influence
// value on log q̂ (0 where the latency is unknown), whether it is known, and
// how many are.
func quantileInfluence(obs []Obs, idx []int, p float64) (q float64, psi []float64, known []bool, n int) {
	psi = make([]float64, len(idx))
	known = make([]bool, len(idx))
	lat := make([]float64, 0, len(idx))
	for k, i := range idx {
		if figure.KnownLatency(obs[i].LatencyMs) {
			known[k] = true
			lat = append(lat, obs[i].LatencyMs)
		}
	}
	n = len(lat)
	if n == 0 {
		return 0, psi, known, 0
	}
	pp := p / 100
	h := hallSheather(n, pp)
	pLo, pHi := math.Max(pp-h, 1/float64(n)), math.Min(pp+h, 1)
	qs := percentile.NearestRanks(lat, p, 100*pHi, 100*pLo)
	q = qs[0]
	sparsity := (qs[1] - qs[2]) / (pHi - pLo)
	// Centred indicators: with ties at q̂ the share at or below it is not p.
	atOrBelow := 0
	for _, v := range lat {
		if v <= q {
			atOrBelow++
		}
	}
	below := float64(atOrBelow) / float64(n)
	scale := 0.0
	if q > 0 {
		scale = sparsity / q
	}
	for k, i := range idx {
		if !known[k] {
			continue
		}
		ind := 0.0
		if obs[i].LatencyMs <= q {
			ind = 1
		}
		psi[k] = -(ind - below) * scale
	}
	return q, psi, known, n
}

// hallSheather is Hall & Sheather's (1988) bandwidth for the sparsity at
// quantile p (0..1) of n values at the 95% level:
// h = n^{−1/3} z^{2/3} (1.5 φ(Φ⁻¹(p))² / (2Φ⁻¹(p)² + 1))^{1/3}, z = Φ⁻¹(0.975).
func hallSheather(n int, p float64) float64 {
	x := distuv.UnitNormal.Quantile(p)
	f := distuv.UnitNormal.Prob(x)
	return math.Pow(float64(n), -1.0/3) * math.Pow(Z95, 2.0/3) * math.Cbrt(1.5*f*f/(2*x*x+1))
}
