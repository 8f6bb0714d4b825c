package main

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/conductor-shadow/conductor-shadow/ingest"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// TestMetricsCountUnpricedIncumbents: incumbent runs stored at 0 USD for want of
// a price are a metric by base model id, so a biased cost comparison is visible.
func TestMetricsCountUnpricedIncumbents(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(&statsCollector{
		stats: func() ingest.StatsSnapshot {
			return ingest.StatsSnapshot{Unpriced: map[string]int64{"acme-router-7": 2}}
		},
		writer: func() store.WriterStats { return store.WriterStats{} },
	})
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range families {
		if f.GetName() != "conductor_shadow_incumbent_unpriced_runs_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				got = append(got, l.GetName()+"="+l.GetValue())
			}
			if v := m.GetCounter().GetValue(); v != 2 {
				t.Errorf("counter %v, want 2", v)
			}
		}
	}
	if len(got) != 1 || got[0] != "model=acme-router-7" {
		t.Errorf("labels %v, want one series model=acme-router-7", got)
	}
}
