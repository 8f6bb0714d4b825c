package eval

import (
	"strings"
	"testing"
	"time"
)

// TestReportSaysWhenLatenciesWereScaled: a report whose simulated pool scaled
// latencies says so, with the factor, in Markdown and HTML; unscaled ones do not.
func TestReportSaysWhenLatenciesWereScaled(t *testing.T) {
	tests := []struct {
		scales []string
		want   string // "" = no note
	}{
		{[]string{"0.2"}, "latency scale ×0.2"},
		{[]string{"0", "0.5"}, "latency scale ×0, ×0.5"},
		{[]string{"1"}, ""},
		{nil, ""},
	}
	for _, tt := range tests {
		meta := ReportMeta{SuiteRunID: "sr-1", SetName: "gsm8k", Incumbent: "inc", StartedAt: time.Unix(0, 0).UTC(),
			FinishedAt: time.Unix(60, 0).UTC(), LatencyScales: tt.scales}
		rep := BuildReport(meta, []Outcome{{CaseID: "c1", Pipeline: "inc", Passed: true, Value: 1, LatencyMs: 100, Simulated: true}})
		md := rep.Markdown()
		page, err := rep.HTML()
		if err != nil {
			t.Fatal(err)
		}
		for name, doc := range map[string]string{"markdown": md, "html": page} {
			has := strings.Contains(doc, "Latencies are SCALED")
			if tt.want == "" && has {
				t.Errorf("%v: the %s report says latencies were scaled", tt.scales, name)
			}
			if tt.want != "" && (!has || !strings.Contains(doc, tt.want)) {
				t.Errorf("%v: the %s report does not say %q", tt.scales, name, tt.want)
			}
		}
	}
}
