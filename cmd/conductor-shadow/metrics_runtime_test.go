package main

import (
	"testing"

	"github.com/conductor-shadow/conductor-shadow/ingest"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// TestMetricsHaveRuntimeAndIngestFamilies: /metrics carries the Go runtime
// and process families beside the ingest parts' state (admission limit and
// pressure, the recorder's counts and buffer).
func TestMetricsHaveRuntimeAndIngestFamilies(t *testing.T) {
	m, err := newMetrics()
	if err != nil {
		t.Fatal(err)
	}
	rec, err := ingest.NewRecorder(ingest.NewDefaultRecordConfig(), ingest.QueueRecords{}, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	parts := ingestParts{recorder: rec, admission: func() ingest.AdmissionSnapshot {
		return ingest.AdmissionSnapshot{Limit: 7, Pressure: ingest.Pressure{OwnCPU: 0.01, Shared: true}}
	}}
	stats := func() ingest.StatsSnapshot {
		return ingest.StatsSnapshot{Recorded: map[string]int64{"shed_latency": 3}, RecordDropped: map[string]int64{"shed_latency": 1}}
	}
	if err := m.watch(stats, func() store.WriterStats { return store.WriterStats{} }, parts); err != nil {
		t.Fatal(err)
	}
	families, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		for _, s := range f.GetMetric() {
			v := s.GetGauge().GetValue() + s.GetCounter().GetValue()
			name := f.GetName()
			for _, l := range s.GetLabel() {
				name += "," + l.GetValue()
			}
			got[name] = v
		}
	}
	for _, name := range []string{"go_goroutines", "go_memstats_heap_alloc_bytes", "process_open_fds", "process_resident_memory_bytes",
		"conductor_shadow_recorder_buffered_records"} {
		if _, ok := got[name]; !ok {
			t.Errorf("family %s missing", name)
		}
	}
	for name, want := range map[string]float64{"conductor_shadow_admission_limit": 7, "conductor_shadow_admission_pressure,shared": 1,
		"conductor_shadow_admission_pressure,own_cpu": 0.01, "conductor_shadow_tap_recorded_total,shed_latency": 3,
		"conductor_shadow_tap_record_dropped_total,shed_latency": 1} {
		if v, ok := got[name]; !ok || v != want {
			t.Errorf("%s = %v (present %v); want %v", name, v, ok, want)
		}
	}
}
