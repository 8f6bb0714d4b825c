package shift

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/conductor-shadow/conductor-shadow/ingest/segment"
	"github.com/conductor-shadow/conductor-shadow/store"
)

func segs(n int, lang string, table bool) []segment.Segments {
	out := make([]segment.Segments, n)
	for i := range out {
		out[i] = segment.Segments{Language: lang, HasTable: table, LengthBucket: "0-127"}
	}
	return out
}

// psiByHand is PSI over two bins with the +0.5 smoothing, written out.
func psiByHand(s1, s2, l1, l2 float64) float64 {
	ns, nl := s1+s2, l1+l2
	a1, a2 := (s1+0.5)/(ns+1), (s2+0.5)/(ns+1)
	b1, b2 := (l1+0.5)/(nl+1), (l2+0.5)/(nl+1)
	return (b1-a1)*math.Log(b1/a1) + (b2-a2)*math.Log(b2/a2)
}

func TestCompare(t *testing.T) {
	from, to := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 8, 0, 0, 0, 0, time.UTC)
	set := append(segs(90, "en", false), segs(10, "ru", false)...)
	cases := []struct {
		name      string
		live      []store.SegmentCount
		flagged   bool
		enough    bool
		langPSI   float64
		langBand  string
		pBelow    float64 // the language chi-square p must be below this (1 = no check)
		reasonHas string
	}{
		{"same mix", []store.SegmentCount{{Language: "en", LengthBucket: "0-127", Requests: 900}, {Language: "ru", LengthBucket: "0-127", Requests: 100}},
			false, true, psiByHand(90, 10, 900, 100), "stable", 1, ""},
		{"russian tables took over", []store.SegmentCount{{Language: "en", LengthBucket: "0-127", Requests: 500}, {Language: "ru", HasTable: true, LengthBucket: "0-127", Requests: 500}},
			true, true, psiByHand(90, 10, 500, 500), "significant", 1e-6, "language: PSI"},
		{"too little traffic", []store.SegmentCount{{Language: "ru", LengthBucket: "0-127", Requests: 20}},
			false, false, psiByHand(90, 10, 0, 20), "significant", 1, "not enough data"},
		{"no live traffic", nil, false, false, 0, "no data", 1, "0 live requests"},
		{"new words", []store.SegmentCount{{Language: "en", LengthBucket: "0-127", Requests: 900, WithNovelty: 900, NovelRequests: 400, NoveltySum: 400}, {Language: "ru", LengthBucket: "0-127", Requests: 100}},
			true, true, psiByHand(90, 10, 900, 100), "stable", 1, "mostly words"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := Compare("s", set, c.live, from, to, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if r.Flagged != c.flagged || r.Enough != c.enough {
				t.Errorf("flagged %v enough %v, want %v %v (reasons %v)", r.Flagged, r.Enough, c.flagged, c.enough, r.Reasons)
			}
			lang := r.Dimensions[0]
			if lang.Name != "language" || math.Abs(lang.PSI-c.langPSI) > 1e-12 || lang.Band != c.langBand {
				t.Errorf("language PSI %.6f %s, want %.6f %s", lang.PSI, lang.Band, c.langPSI, c.langBand)
			}
			if lang.P >= c.pBelow && c.pBelow < 1 {
				t.Errorf("chi-square p %g, want below %g", lang.P, c.pBelow)
			}
			if c.reasonHas != "" && !strings.Contains(strings.Join(r.Reasons, ";"), c.reasonHas) {
				t.Errorf("reasons %v lack %q", r.Reasons, c.reasonHas)
			}
			if md := r.Markdown(); !strings.Contains(md, "| language |") || !strings.Contains(md, "Siddiqi 2006") {
				t.Errorf("markdown lacks the table or the citation:\n%s", md)
			}
		})
	}
	if _, err := Compare("s", nil, nil, from, to, Options{}); err == nil {
		t.Error("an empty set must be an error")
	}
}

// TestChiSquareByHand checks Pearson's statistic on one dimension against a
// value computed by hand: set 50/50 (smoothed 50.5/101 each), live 70/30.
func TestChiSquareByHand(t *testing.T) {
	d := compareDim("x", map[string]int{"a": 50, "b": 50}, map[string]int64{"a": 70, "b": 30})
	want := (70-50.0)*(70-50.0)/50 + (30-50.0)*(30-50.0)/50
	if math.Abs(d.ChiSquare-want) > 1e-9 || d.DF != 1 {
		t.Errorf("chi-square %v df %d, want %v df 1", d.ChiSquare, d.DF, want)
	}
	// χ²(1) = 16 has p ≈ 6.3e-5.
	if d.P < 5e-5 || d.P > 7e-5 {
		t.Errorf("p = %g, want about 6.3e-5", d.P)
	}
}
