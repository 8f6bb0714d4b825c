package main

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/conductor-shadow/conductor-shadow/ingest"
)

// registerRuntime adds the Go runtime families (go_goroutines, go_memstats_*,
// go_gc_duration_seconds, go_sched_*) and the process families
// (process_open_fds, process_resident_memory_bytes,
// process_cpu_seconds_total, ...) of client_golang's collectors.
func (m *metrics) registerRuntime() error {
	for _, c := range []prometheus.Collector{
		collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(collectors.MetricsScheduler, collectors.MetricsGC)),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	} {
		if err := m.reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// ingestParts are the ingest parts whose state /metrics reads at scrape time;
// each nil where the role has none.
type ingestParts struct {
	admission func() ingest.AdmissionSnapshot
	recorder  *ingest.Recorder
}

var (
	descRecorded = prometheus.NewDesc("conductor_shadow_tap_recorded_total",
		"Exchanges not shadowed whose record (with its text, or a metadata row) was stored, by why they were not shadowed "+
			"(shed_latency, sampled_out, capture_busy, too_large, ...).", []string{"reason"}, nil)
	descRecordDropped = prometheus.NewDesc("conductor_shadow_tap_record_dropped_total",
		"Exchanges not shadowed whose record was lost as well (the recorder's buffers full, or a stop): no row; by the same reasons.",
		[]string{"reason"}, nil)
	descRecordBuffered = prometheus.NewDesc("conductor_shadow_recorder_buffered_records",
		"Records of exchanges not shadowed waiting for the store now.", nil, nil)
	descAdmissionLimit = prometheus.NewDesc("conductor_shadow_admission_limit",
		"Shadow runs the adaptive limit allows at once now.", nil, nil)
	descAdmissionInFlight = prometheus.NewDesc("conductor_shadow_admission_inflight_runs",
		"Shadow runs executing now.", nil, nil)
	descAdmissionWaiting = prometheus.NewDesc("conductor_shadow_admission_waiting_runs",
		"Shadow workers waiting for a slot of the limit now.", nil, nil)
	descAdmissionPressure = prometheus.NewDesc("conductor_shadow_admission_pressure",
		"The last interval's pressure signals: slow_share (proxied requests above max_added_latency, 0-1), sched_p99_seconds, "+
			"cpu (machine busy fraction, -1 unknown), own_cpu (this process's share of the machine, -1 unknown), "+
			"shared (1: a machine signal was over its bound but not counted, the process using less than min_own_cpu), "+
			"shedding (1: proxy copies are shed from shadowing, still recorded).", []string{"signal"}, nil)
)

// ingestCollector turns the admission's and the recorder's state into samples.
type ingestCollector struct {
	stats func() ingest.StatsSnapshot
	parts ingestParts
}

func (c *ingestCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRecorded, descRecordDropped, descRecordBuffered, descAdmissionLimit,
		descAdmissionInFlight, descAdmissionWaiting, descAdmissionPressure} {
		ch <- d
	}
}

func (c *ingestCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	for k, v := range s.Recorded {
		ch <- prometheus.MustNewConstMetric(descRecorded, prometheus.CounterValue, float64(v), k)
	}
	for k, v := range s.RecordDropped {
		ch <- prometheus.MustNewConstMetric(descRecordDropped, prometheus.CounterValue, float64(v), k)
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	if r := c.parts.recorder; r != nil {
		gauge(descRecordBuffered, float64(r.Buffered()))
	}
	if c.parts.admission == nil {
		return
	}
	a := c.parts.admission()
	gauge(descAdmissionLimit, float64(a.Limit))
	gauge(descAdmissionInFlight, float64(a.InFlight))
	gauge(descAdmissionWaiting, float64(a.Waiting))
	p := a.Pressure
	flag := func(b bool) float64 {
		if b {
			return 1
		}
		return 0
	}
	gauge(descAdmissionPressure, p.SlowShare, "slow_share")
	gauge(descAdmissionPressure, p.SchedP99Ms/1000, "sched_p99_seconds")
	gauge(descAdmissionPressure, p.CPU, "cpu")
	gauge(descAdmissionPressure, p.OwnCPU, "own_cpu")
	gauge(descAdmissionPressure, flag(p.Shared), "shared")
	gauge(descAdmissionPressure, flag(p.Reason != ""), "shedding")
}
