package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/conductor-shadow/conductor-shadow/ingest"
	"github.com/conductor-shadow/conductor-shadow/store"
)

// metrics is the /metrics endpoint: a private Prometheus registry holding the
// tap and writer counters (read at scrape time) and the OpenTelemetry meter
// provider whose instruments (the GenAI client metrics
// gen_ai_client_token_usage and gen_ai_client_operation_duration_seconds,
// conductor_shadow_runs_total, conductor_shadow_cost_usd_total) the
// Prometheus exporter translates into the same registry.
type metrics struct {
	reg    *prometheus.Registry
	meters *sdkmetric.MeterProvider
}

func newMetrics() (*metrics, error) {
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo(), otelprom.WithoutTargetInfo())
	if err != nil {
		return nil, fmt.Errorf("metrics: prometheus exporter: %w", err)
	}
	m := &metrics{reg: reg, meters: sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))}
	if err := m.registerRuntime(); err != nil {
		return nil, fmt.Errorf("metrics: runtime collectors: %w", err)
	}
	return m, nil
}

// watch registers the tap's and the writer's counters and the ingest parts'
// state (admission, recorder); each scrape reads them.
func (m *metrics) watch(stats func() ingest.StatsSnapshot, writer func() store.WriterStats, parts ingestParts) error {
	if err := m.reg.Register(&statsCollector{stats: stats, writer: writer}); err != nil {
		return err
	}
	return m.reg.Register(&ingestCollector{stats: stats, parts: parts})
}

// handler serves the registry in the Prometheus text format.
func (m *metrics) handler() gin.HandlerFunc {
	h := promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
	return gin.WrapH(h)
}

// Shutdown stops the meter provider. Safe twice.
func (m *metrics) Shutdown(ctx context.Context) error {
	if m == nil {
		return nil
	}
	if err := m.meters.Shutdown(ctx); err != nil && !errors.Is(err, sdkmetric.ErrReaderShutdown) {
		return fmt.Errorf("metrics: shutdown: %w", err)
	}
	return nil
}

// descUnpricedHelp is the help text of conductor_shadow_incumbent_unpriced_runs_total.
const descUnpricedHelp = "Incumbent runs that used tokens but whose model had no price (after resolving dated snapshots and " +
	"request.model): stored at 0 USD, so cost comparisons over them favour the incumbent; by base model id."

var (
	descTap = prometheus.NewDesc("conductor_shadow_tap_copies_total",
		"Tapped copies by outcome: accepted (queued), duplicate, processed (shadowed and stored), failed, "+
			"unconfirmed (503: the store did not confirm in time), recovered (pending work picked up at start), "+
			"left_pending (stopped by shutdown, shadowed at the next start).", []string{"outcome"}, nil)
	descCancelled = prometheus.NewDesc("conductor_shadow_runs_cancelled_total",
		"Candidate runs stopped by a shutdown (stored as cancelled, shadowed again at the next start).", nil, nil)
	descSkipped = prometheus.NewDesc("conductor_shadow_runs_skipped_total",
		"Candidate runs not started because the store already held a finished run of that request, pipeline and version "+
			"(a re-delivered or re-sent exchange: duplicates, never run twice).", nil, nil)
	descKafkaRedelivered = prometheus.NewDesc("conductor_shadow_kafka_redelivered_total",
		"Exchanges handed to this shadow worker that an earlier owner of the partition had been handed and had not stored "+
			"(killed with -9, or its drain at a rebalance ran out): with separate stores each may run a second time.", nil, nil)
	descKafkaSkippedDone = prometheus.NewDesc("conductor_shadow_kafka_skipped_done_total",
		"Kafka messages an earlier owner of the partition had stored but not committed past: skipped, not shadowed again.", nil, nil)
	descKafkaRevoked = prometheus.NewDesc("conductor_shadow_kafka_revoked_unfinished_total",
		"Exchanges still being shadowed when this worker's drain (ingest.kafka.drain_timeout) ended at a rebalance: "+
			"the partition's next owner shadows them again.", nil, nil)
	descKafkaClaimCheck = prometheus.NewDesc("conductor_shadow_kafka_claim_check_copies_total",
		"Copies above the topic's message limit sent as claim-check chunks (published, by the tap) and rebuilt and "+
			"verified (reassembled, by a shadow worker).", []string{"side"}, nil)
	descRejected = prometheus.NewDesc("conductor_shadow_tap_rejected_total",
		"Copies refused with a 4xx, by reason.", []string{"reason"}, nil)
	descDropped = prometheus.NewDesc("conductor_shadow_tap_dropped_total",
		"Copies accepted or offered but not shadowed, by reason (queue_full, shutting_down, store_unavailable, ...).", []string{"reason"}, nil)
	descUnsampled = prometheus.NewDesc("conductor_shadow_tap_unsampled_total",
		"Valid copies left out by sampling or the per-minute cap, by reason.", []string{"reason"}, nil)
	descMirrored = prometheus.NewDesc("conductor_shadow_proxy_exchanges_total",
		"Mirroring-proxy exchanges by outcome.", []string{"outcome"}, nil)
	descProxyRefused = prometheus.NewDesc("conductor_shadow_proxy_refused_total",
		"Requests the mirroring proxy refused before forwarding anything, by reason (foreign_host, cross_site, untrusted, bad_path).", []string{"reason"}, nil)
	descStoredOnly = prometheus.NewDesc("conductor_shadow_tap_stored_only_total",
		"Copies stored with their incumbent run but not shadowed, by reason (incumbent_not_2xx).", []string{"reason"}, nil)
	descUnpriced = prometheus.NewDesc("conductor_shadow_incumbent_unpriced_runs_total", descUnpricedHelp, []string{"model"}, nil)
	descQueue    = prometheus.NewDesc("conductor_shadow_tap_queue_depth",
		"Copies waiting for a shadow worker now.", nil, nil)
	descWriterRows = prometheus.NewDesc("conductor_shadow_writer_rows_total",
		"Store writer rows by outcome: written, dropped (INSERT failed after retries or unwritten at shutdown).", []string{"outcome"}, nil)
	descWriterQueued = prometheus.NewDesc("conductor_shadow_writer_queued_rows",
		"Rows accepted by the store writer and not yet written or dropped.", nil, nil)
	descWriterFailures = prometheus.NewDesc("conductor_shadow_writer_insert_failures_total",
		"INSERT attempts that failed (each retry counts).", nil, nil)
	descWriterRejected = prometheus.NewDesc("conductor_shadow_writer_rejected_batches_total",
		"Batches the store writer refused (queue full or stopped).", nil, nil)
)

// statsCollector turns the counters' snapshots into Prometheus samples.
type statsCollector struct {
	stats  func() ingest.StatsSnapshot
	writer func() store.WriterStats
}

func (c *statsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descTap, descCancelled, descSkipped,
		descKafkaRedelivered, descKafkaSkippedDone, descKafkaRevoked, descKafkaClaimCheck, descRejected, descDropped, descUnsampled, descMirrored, descProxyRefused, descStoredOnly, descUnpriced, descQueue,
		descWriterRows, descWriterQueued, descWriterFailures, descWriterRejected} {
		ch <- d
	}
}

func (c *statsCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	counter(descTap, s.Accepted, "accepted")
	counter(descTap, s.Duplicates, "duplicate")
	counter(descTap, s.Processed, "processed")
	counter(descTap, s.Failed, "failed")
	counter(descTap, s.Unconfirmed, "unconfirmed")
	counter(descTap, s.Recovered, "recovered")
	counter(descTap, s.LeftPending, "left_pending")
	counter(descCancelled, s.CancelledRuns)
	counter(descSkipped, s.SkippedRuns)
	counter(descKafkaRedelivered, s.Kafka.Redelivered)
	counter(descKafkaSkippedDone, s.Kafka.SkippedDone)
	counter(descKafkaRevoked, s.Kafka.RevokedUnfinished)
	counter(descKafkaClaimCheck, s.Kafka.ClaimChecked, "published")
	counter(descKafkaClaimCheck, s.Kafka.Reassembled, "reassembled")
	for _, m := range []struct {
		d *prometheus.Desc
		v map[string]int64
	}{{descRejected, s.Rejected}, {descDropped, s.Dropped}, {descUnsampled, s.Unsampled}, {descMirrored, s.Mirrored}, {descProxyRefused, s.ProxyRefused}, {descStoredOnly, s.StoredOnly}, {descUnpriced, s.Unpriced}} {
		for k, v := range m.v {
			counter(m.d, v, k)
		}
	}
	ch <- prometheus.MustNewConstMetric(descQueue, prometheus.GaugeValue, float64(s.Queued))
	w := c.writer()
	counter(descWriterRows, w.Written, "written")
	counter(descWriterRows, w.Dropped, "dropped")
	ch <- prometheus.MustNewConstMetric(descWriterQueued, prometheus.GaugeValue, float64(w.Queued))
	counter(descWriterFailures, w.Failed)
	counter(descWriterRejected, w.Rejected)
}

// registerMetrics mounts GET /metrics.
func registerMetrics(r gin.IRouter, m *metrics) {
	r.GET("/metrics", m.handler())
}
