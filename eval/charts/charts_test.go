package charts

import (
	"encoding/xml"
	"io"
	"strings"
	"testing"
)

// parseSVG checks the text is one well-formed SVG document and returns the
// count of each element name and every text node.
func parseSVG(t *testing.T, svg string) (map[string]int, []string) {
	t.Helper()
	if !strings.HasPrefix(strings.TrimSpace(svg), "<svg") {
		t.Fatalf("not an svg document: %.80q", svg)
	}
	counts := map[string]int{}
	var texts []string
	dec := xml.NewDecoder(strings.NewReader(svg))
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("malformed svg: %v", err)
		}
		switch v := tok.(type) {
		case xml.StartElement:
			counts[v.Name.Local]++
		case xml.CharData:
			if s := strings.TrimSpace(string(v)); s != "" {
				texts = append(texts, s)
			}
		}
	}
	return counts, texts
}

func has(texts []string, want string) bool {
	for _, s := range texts {
		if s == want {
			return true
		}
	}
	return false
}

func TestCharts(t *testing.T) {
	cats := []string{"math", "mmlu", "a-very-long-category-name-indeed"}
	tests := []struct {
		name      string
		render    func() (string, error)
		wantTexts []string
		notTexts  []string
	}{
		{"accuracy by category", func() (string, error) {
			return AccuracyByCategory(cats, []CategorySeries{
				{Name: "single:gpt-5", Acc: []float64{0.6, 0.5, 1}, Low: []float64{0.4, 0.2, 0.8}, High: []float64{0.8, 0.8, 1}},
				{Name: "conductor", Acc: []float64{0.7, 0.9, 0.5}, Low: []float64{0.5, 0.6, 0.2}, High: []float64{0.85, 0.98, 0.8}},
			})
		}, []string{"single:gpt-5", "conductor", "math", "mmlu", "a-very-long-categ…", "accuracy (%)"}, nil},
		{"cost vs quality", func() (string, error) {
			return CostQuality([]CostQualityPoint{{Name: "single:gpt-5", CostUSD: 0.002, Acc: 0.6, Low: 0.5, High: 0.7},
				{Name: "conductor", CostUSD: 0.0035, Acc: 0.8, Low: 0.7, High: 0.9}})
		}, []string{"single:gpt-5", "conductor", "cost per request (USD)"}, nil},
		{"latency cdf", func() (string, error) {
			return LatencyCDF([]LatencySeries{{Name: "single:gpt-5", LatencyMs: []float64{500, 100, 900}}, {Name: "conductor", LatencyMs: []float64{2000}}, {Name: "empty"}})
		}, []string{"single:gpt-5", "conductor", "latency (ms)"}, []string{"empty"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			svg, err := tc.render()
			if err != nil {
				t.Fatal(err)
			}
			counts, texts := parseSVG(t, svg)
			if counts["path"] < 2 {
				t.Errorf("only %d paths drawn", counts["path"])
			}
			for _, w := range tc.wantTexts {
				if !has(texts, w) {
					t.Errorf("svg lacks text %q; texts: %q", w, texts)
				}
			}
			for _, w := range tc.notTexts {
				if has(texts, w) {
					t.Errorf("svg has text %q", w)
				}
			}
		})
	}
}

func TestChartEscapesLabels(t *testing.T) {
	svg, err := LatencyCDF([]LatencySeries{{Name: "<script>alert(1)</script>", LatencyMs: []float64{1, 2}}})
	if err != nil {
		t.Fatal(err)
	}
	counts, texts := parseSVG(t, svg)
	if counts["script"] != 0 || !has(texts, "<script>alert(1)</script>") {
		t.Errorf("label not escaped: script elements %d, texts %q", counts["script"], texts)
	}
}

func TestChartErrors(t *testing.T) {
	if _, err := AccuracyByCategory(nil, nil); err == nil {
		t.Error("no data: want error")
	}
	if _, err := AccuracyByCategory([]string{"a", "b"}, []CategorySeries{{Name: "x", Acc: []float64{1}}}); err == nil || !strings.Contains(err.Error(), `series "x" has 1 values for 2 categories`) {
		t.Errorf("misaligned: %v", err)
	}
	if _, err := CostQuality(nil); err == nil {
		t.Error("no points: want error")
	}
	if _, err := LatencyCDF([]LatencySeries{{Name: "x"}}); err == nil {
		t.Error("no latencies: want error")
	}
}
