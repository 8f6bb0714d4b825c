package gate

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkLiveVerdicts200k measures the running verdicts on the most pairs
// the store hands over in one read (store.MaxAgreementPairs, 200,000), two
// candidates, each pair in four segments out of 12 languages × table/code ×
// two length buckets: the cost of one overview page or report section.
func BenchmarkLiveVerdicts200k(b *testing.B) {
	langs := []string{"en", "ru", "de", "fr", "es", "zh", "ja", "pt", "it", "ko", "ar", "hi"}
	pairs := make([]LivePair, 0, 200_000)
	for i := range 200_000 {
		lang := "lang:" + langs[i%len(langs)]
		segs := []string{lang, fmt.Sprint("len:", []string{"0-127", "128-511"}[i%2])}
		if i%7 == 0 {
			segs = append(segs, "table", lang+"+table")
		}
		pairs = append(pairs, LivePair{Candidate: []string{"conductor", "moa"}[i/100_000], Agree: i%50 != 0, Segments: segs})
	}
	pol := NewDefaultPolicy()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := LiveVerdicts(pairs, 7*24*time.Hour, false, pol); err != nil {
			b.Fatal(err)
		}
	}
}
