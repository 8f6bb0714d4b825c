package gate

import (
	"testing"
	"time"
)

// BenchmarkLiveSequence200k measures one look at a live sequence of 200,000
// requests (a quarter judged, 2% failed runs, every pair with a cost and a
// latency, one listed segment of four): replaying them through Observe and
// reading Verdict is what the overview does per candidate on each view.
func BenchmarkLiveSequence200k(b *testing.B) {
	pol := NewDefaultPolicy()
	pol.Segments = &SegmentsGate{MustNotRegress: []string{"lang:ru"}, MinN: 20}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	obs := make([]LiveObs, 200_000)
	for i := range obs {
		o := LiveObs{Kind: LiveUnjudged, At: t0.Add(time.Duration(i) * time.Second), IncumbentUSD: 0.002, CandidateUSD: 0.0021,
			IncumbentMs: 900 + float64(i%400), CandidateMs: 950 + float64(i%350), Segments: []string{[]string{"lang:en", "lang:ru", "lang:de", "lang:fr"}[i%4]}}
		switch {
		case i%50 == 0:
			o.Kind = LiveFailed
		case i%4 == 1:
			o.Kind, o.InclusionProb, o.JudgedAt, o.Score = LiveJudged, 0.25, o.At, float64(i%3-1)
		}
		obs[i] = o
	}
	b.ReportAllocs()
	for b.Loop() {
		seq, err := NewLiveSequence(pol)
		if err != nil {
			b.Fatal(err)
		}
		for _, o := range obs {
			seq.Observe(o)
		}
		_ = seq.Verdict(LiveEvidence{})
	}
}
