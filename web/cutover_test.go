package web

import (
	"math"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/eval"
	"github.com/conductor-shadow/conductor-shadow/eval/gate"
	"github.com/conductor-shadow/conductor-shadow/eval/stats"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// TestFollowData: the default window moves back to the newest stored
// traffic only when the last 24 h hold none of it, and then still ends now.
func TestFollowData(t *testing.T) {
	now := time.Date(2026, 12, 1, 23, 30, 0, 0, time.UTC)
	q, err := parseOverviewQuery(url.Values{}, now)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		newest   time.Time
		moved    bool
		wantFrom time.Time
	}{
		{"empty store", time.Time{}, false, q.From},
		{"traffic in the last hour", now.Add(-time.Hour), false, q.From},
		{"traffic just inside the window", q.From, false, q.From},
		{"replayed traffic 8 days old", time.Date(2026, 11, 23, 0, 10, 49, 0, time.UTC), true,
			time.Date(2026, 11, 22, 0, 11, 0, 0, time.UTC)},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, followed := followData(q, c.newest)
			if moved := !followed.IsZero(); moved != c.moved {
				t.Fatalf("moved = %v, want %v", moved, c.moved)
			}
			if !got.From.Equal(c.wantFrom) || !got.To.Equal(q.To) {
				t.Errorf("window = [%v, %v), want [%v, %v)", got.From, got.To, c.wantFrom, q.To)
			}
			if c.moved && (c.newest.Before(got.From) || !c.newest.Before(got.To)) {
				t.Errorf("the moved window [%v, %v) must hold the newest request %v", got.From, got.To, c.newest)
			}
		})
	}
	if defaultWindow(url.Values{"from": {"2026-11-01T00:00"}}) || !defaultWindow(url.Values{"app": {"x"}}) {
		t.Error("only a URL without from and to has the default window")
	}
}

// TestBlockerOf names the one thing that blocks, in order: a gate that did
// not PASS, a segment found worse, a live FAIL, a non-PASS suite verdict.
func TestBlockerOf(t *testing.T) {
	gates := func(rs ...gate.Result) *eval.CandidateComparison {
		return &eval.CandidateComparison{Verdict: gate.Verdict{Gates: rs}}
	}
	pass := gate.Result{Gate: "quality", Status: gate.Pass}
	for _, c := range []struct {
		name string
		sv   *suiteVerdict
		live *eval.LiveCandidate
		want string // substring; "" means nothing blocks
	}{
		{"no suite run", nil, nil, "no suite verdict yet"},
		{"a gate inconclusive", &suiteVerdict{Verdict: "INCONCLUSIVE", Comparison: gates(pass,
			gate.Result{Gate: "min_n", Status: gate.Inconclusive, Reason: "only 4 paired graded cases"})}, nil,
			"gate min_n INCONCLUSIVE: only 4 paired graded cases"},
		{"a segment worse", &suiteVerdict{Verdict: "FAIL", SuiteRunID: "sr-1", WorseOn: []string{"lang:ru", "table"},
			Comparison: gates(pass)}, nil, "segment lang:ru significantly worse"},
		{"all passed", &suiteVerdict{Verdict: "PASS", Comparison: gates(pass)}, &eval.LiveCandidate{LiveVerdict: gate.LiveVerdict{Verdict: gate.Inconclusive}}, ""},
		{"live FAIL", &suiteVerdict{Verdict: "PASS", Comparison: gates(pass)}, &eval.LiveCandidate{LiveVerdict: gate.LiveVerdict{Verdict: gate.Fail,
			Gates: []gate.Result{{Gate: "quality", Status: gate.Pass}, {Gate: "p95", Status: gate.Fail, Reason: "2.1× the incumbent's"}}}},
			"live p95 FAIL: 2.1× the incumbent's"},
		{"unreadable report", &suiteVerdict{Verdict: "FAIL"}, nil, "suite verdict FAIL"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := blockerOf(c.sv, c.live)
			if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
				t.Errorf("blocker = %q, want %q", got, c.want)
			}
		})
	}
}

// TestNewCutoverRow: ratios are candidate ÷ production incumbent from the
// store's figures, agreement carries its Wilson interval, the answer follows
// the suite verdict.
func TestNewCutoverRow(t *testing.T) {
	inc := store.PipelinePoint{Pipeline: "incumbent:gpt-4", Mode: store.ModeIncumbent, CostPerRequestUSD: 0.004, P95Ms: 200}
	cand := store.PipelinePoint{Pipeline: "conductor", Mode: store.ModeCandidate, CostPerRequestUSD: 0.001, P95Ms: 300}
	cmp := &eval.CandidateComparison{Comparison: stats.Comparison{
		Quality:   stats.Paired{N: 100, Diff: 0.02, DiffCI: stats.Interval{Low: -0.011, High: 0.05}},
		CostRatio: 0.25, CostRatioCI: stats.Interval{Low: 0.2, High: 0.3},
		P95Ratio: 1.5, P95RatioCI: stats.Interval{Low: 0, High: 1e6}}}
	r := newCutoverRow(cand, &inc, &store.Agreement{Candidate: "conductor", Pairs: 40, Agree: 35},
		&suiteVerdict{Verdict: "PASS", Baseline: "single:gpt-5", Comparison: cmp}, nil)
	iv := stats.Wilson(35, 40, stats.ZFor(0.95))
	for name, c := range map[string][2]string{
		"answer":        {r.Answer, cutoverYes},
		"cost ratio":    {r.CostRatio, "0.25×"},
		"p95 ratio":     {r.P95Ratio, "1.50×"},
		"agreement":     {r.Agreement, fmtPctIv(35.0/40, iv)},
		"suite quality": {r.SuiteQuality, "+2.0 pts [-1.1, +5.0]"},
		"suite cost":    {r.SuiteCost, "0.25× [0.20, 0.30]"},
		"suite p95":     {r.SuiteP95, "1.50× [0.00, unbounded]"},
	} {
		if c[0] != c[1] {
			t.Errorf("%s = %q, want %q", name, c[0], c[1])
		}
	}
	none := newCutoverRow(store.PipelinePoint{Pipeline: "x", Mode: store.ModeCandidate}, nil, nil, nil, nil)
	if none.Answer != cutoverNotYet || none.CostRatio != "—" || none.Agreement != "—" || none.Blocker == "" {
		t.Errorf("a candidate without incumbent, pairs or suite: %+v", none)
	}
}

// TestAxisTicks: axes end on round figures and their labels carry units.
func TestAxisTicks(t *testing.T) {
	for _, c := range []struct {
		top  float64
		want string
	}{
		{0.016109, "0 0.005 0.01 0.015 0.02"}, {31412, "0 10000 20000 30000 40000"}, {0, "0 0.2 0.4 0.6 0.8 1"},
		{1, "0 0.2 0.4 0.6 0.8 1"}, {240, "0 100 200 300"}, {math.NaN(), "0 0.2 0.4 0.6 0.8 1"},
	} {
		var got []string
		for _, v := range axisTicks(c.top) {
			got = append(got, strconv.FormatFloat(v, 'g', 6, 64))
		}
		if g := strings.Join(got, " "); g != c.want {
			t.Errorf("axisTicks(%g) = %s, want %s", c.top, g, c.want)
		}
	}
	for in, want := range map[float64]string{0.005: "$0.005", 0.0125: "$0.0125", 1.5: "$1.50", 0: "$0.00"} {
		if got := fmtTickUSD(in); got != want {
			t.Errorf("fmtTickUSD(%g) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[float64]string{250: "250 ms", 12500: "12.5 s", 50000: "50 s"} {
		if got := fmtTickMs(in); got != want {
			t.Errorf("fmtTickMs(%g) = %q, want %q", in, got, want)
		}
	}
	for _, c := range []struct {
		lo, hi float64
		want   string
	}{{0, 10, "<10"}, {10, 20, "10–20"}, {1000, 2000, "1k–2k"}, {50000, 0, "≥50k"}} {
		if got := binLabel(c.lo, c.hi); got != c.want {
			t.Errorf("binLabel(%g, %g) = %q, want %q", c.lo, c.hi, got, c.want)
		}
	}
}

// TestLatencyHistogram draws shares per bin, the bins between the lowest and
// highest used, each pipeline's shares summing to one.
func TestLatencyHistogram(t *testing.T) {
	bins := []store.LatencyBin{
		{Pipeline: "inc", Mode: store.ModeIncumbent, Bin: 2, Runs: 3}, {Pipeline: "inc", Mode: store.ModeIncumbent, Bin: 4, Runs: 1},
		{Pipeline: "cand", Mode: store.ModeCandidate, Bin: 3, Runs: 2},
	}
	c := newLatencyHistogram(bins, map[string]string{"inc": "series-0", "cand": "series-1"})
	var labels []string
	for _, x := range c.XTicks {
		labels = append(labels, x.Label)
	}
	if got := strings.Join(labels, " "); got != "20–50 50–100 100–200" {
		t.Errorf("bins = %q", got)
	}
	if len(c.Legend) != 2 || c.Legend[0].Name != "inc" {
		t.Fatalf("legend = %+v", c.Legend)
	}
	for _, g := range c.Legend {
		var sum float64
		for _, v := range g.Values {
			sum += v
		}
		if math.Abs(sum-1) > 1e-9 {
			t.Errorf("%s shares sum to %g", g.Name, sum)
		}
	}
	if len(c.Bars) != 6 {
		t.Errorf("bars = %d, want 3 bins × 2 pipelines", len(c.Bars))
	}
	if e := newLatencyHistogram(nil, nil); e.Empty == "" {
		t.Error("an empty histogram must say so")
	}
}
