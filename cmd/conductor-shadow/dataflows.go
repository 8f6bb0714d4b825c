package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"github.com/conductor-shadow/conductor-shadow/cmd/internal/platform"
	"github.com/conductor-shadow/conductor-shadow/ingest"
	"github.com/conductor-shadow/conductor-shadow/store"
	"github.com/conductor-shadow/conductor-shadow/store/dataflow"
)

// flowSettings are what the record of data flows says about cfg: the
// recipients it configures now (every pool worker, the suite and live
// judges, the OTLP endpoint (its log endpoint with live judging), the Kafka
// brokers, the notification sinks; hosts only,
// never credentials, paths or query strings), store.retention and the PII
// rules. getenv reads the webhook's URL to name its host.
func flowSettings(cfg platform.Config, getenv func(string) string) dataflow.Settings {
	s := dataflow.Settings{Retention: cfg.Store.Retention, PIIEnabled: cfg.Ingest.PII.Enabled,
		PIIRules: append([]string(nil), cfg.Ingest.PII.Rules...), CaptureContent: cfg.Telemetry.CaptureContent, Configured: []dataflow.Configured{}}
	for _, c := range cfg.Ingest.PII.Custom {
		s.PIIRules = append(s.PIIRules, c.Name)
	}
	for _, w := range cfg.Shadow.Workers {
		s.Configured = append(s.Configured, dataflow.Configured{Kind: dataflow.KindWorker, Name: w.Name, Host: w.Host(), Models: []string{w.Model}})
	}
	judges := []string{cfg.Suite.Judge.Worker}
	if cfg.Judge.Live.Enabled() && cfg.LiveJudgeWorker() != cfg.Suite.Judge.Worker {
		judges = append(judges, cfg.LiveJudgeWorker())
	}
	for _, name := range judges {
		if w, ok := cfg.Shadow.Worker(name); ok {
			s.Configured = append(s.Configured, dataflow.Configured{Kind: dataflow.KindJudge, Name: w.Name, Host: w.Host(), Models: []string{w.Model}})
		}
	}
	if e := cfg.Telemetry.OTLPEndpoint; e != "" {
		s.Configured = append(s.Configured, dataflow.Configured{Kind: dataflow.KindOTLP, Name: otlpRecipient, Host: otlpHost(e)})
		if cfg.Judge.Live.Enabled() { // live judging's evaluation events
			s.Configured = append(s.Configured, dataflow.Configured{Kind: dataflow.KindOTLPLogs, Name: otlpLogsRecipient, Host: otlpHost(e)})
		}
	}
	if k := cfg.Ingest.Kafka; k.Enabled() {
		s.Configured = append(s.Configured, dataflow.Configured{Kind: dataflow.KindKafka, Name: k.Topic, Host: ingest.BrokersHost(k.Brokers)})
	}
	if env := cfg.Notify.Webhook.URLEnv; env != "" {
		host := ""
		if u, err := url.Parse(getenv(env)); err == nil {
			host = u.Host // the path is the receiver's secret: never kept
		}
		s.Configured = append(s.Configured, dataflow.Configured{Kind: dataflow.KindWebhook, Name: dataflow.KindWebhook, Host: host})
	}
	if e := cfg.Notify.Email; e.SMTPHost != "" {
		s.Configured = append(s.Configured, dataflow.Configured{Kind: dataflow.KindEmail, Name: dataflow.KindEmail, Host: fmt.Sprintf("%s:%d", e.SMTPHost, e.SMTPPort)})
	}
	return s
}

// flowsRequest is the body of POST /api/data-flows.
type flowsRequest struct {
	Since string `json:"since"` // window length up to now, a Go duration; "" = 168h
}

// flowRecorder builds the record of data flows over one store's reader.
type flowRecorder struct {
	reader   store.FlowReader // nil: the store cannot tell (501)
	settings dataflow.Settings
}

// record is the record of the window `since` long, up to now.
func (f *flowRecorder) record(ctx context.Context, since time.Duration) (dataflow.Record, error) {
	to := time.Now().UTC()
	return dataflow.Build(ctx, f.reader, f.settings, to.Add(-since), to)
}

// between is record for [from, to): a suite report's section.
func (f *flowRecorder) between(ctx context.Context, from, to time.Time) (*dataflow.Record, error) {
	rec, err := dataflow.Build(ctx, f.reader, f.settings, from, to)
	if err != nil {
		return nil, err
	}
	return &rec, nil
}

// flowsHandler answers POST /api/data-flows with the record (JSON): 400 for
// a bad window, 501 without a store.FlowReader.
func (a *api) flowsHandler(c *gin.Context) {
	var req flowsRequest
	c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, 4<<10)
	if c.Request.ContentLength != 0 {
		if err := c.ShouldBindJSON(&req); err != nil {
			c.JSON(http.StatusBadRequest, gin.H{"error": "want a JSON body {\"since\": \"168h\"}"})
			return
		}
	}
	since, err := dataflow.ParseWindow(req.Since)
	if err != nil {
		c.JSON(http.StatusBadRequest, gin.H{"error": err.Error()})
		return
	}
	rec, err := a.flows.record(c.Request.Context(), since)
	switch {
	case errors.Is(err, store.ErrNotSupported):
		c.JSON(http.StatusNotImplemented, gin.H{"error": err.Error()})
	case err != nil:
		_ = c.Error(err)
		c.JSON(http.StatusInternalServerError, gin.H{"error": "data flows: the store failed (see server log)"})
	default:
		c.JSON(http.StatusOK, rec)
	}
}

// dataFlowsCmd is `conductor-shadow data-flows`: the record of data flows of
// the last --since, through a running server's read-only API when it holds
// the store, else from the store directly.
func dataFlowsCmd(load platform.Loader) *cobra.Command {
	var (
		since  time.Duration
		asJSON bool
		local  bool
	)
	cmd := &cobra.Command{
		Use:   "data-flows",
		Short: "List every party outside the platform that received data in a window, with what it received and the retention that applies",
		Long: `List every party outside the platform that received data in the last --since: each
worker's endpoint (provider and host), the LLM judge, the OTLP receiver, the Kafka brokers
and the notification sinks, with the calls or items, HTTP requests, tokens and bytes they
received, whether content or metadata only, the PII kinds pseudonymized before sending,
and the retention and deletion settings that apply. Built from what was sent (stored
steps, judgments and scores, and the exporters' hourly counts), not from the
configuration; configured recipients that received nothing are listed as "configured,
nothing sent". Prints Markdown, or JSON with --json.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if since <= 0 || since > dataflow.MaxWindow {
				return fmt.Errorf("data-flows: --since must be positive and at most %v, got %v", dataflow.MaxWindow, since)
			}
			cfg, err := load()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			var rec dataflow.Record
			answered, err := askServer(ctx, cfg, local, "/api/data-flows", 5*time.Minute, flowsRequest{Since: since.String()}, &rec)
			if err != nil {
				return fmt.Errorf("data-flows: %w", err)
			}
			if !answered {
				st, _, err := platform.OpenStore(ctx, cfg)
				if err != nil {
					return err
				}
				defer st.Close()
				f := &flowRecorder{reader: store.NewRoles(st).FlowReader, settings: flowSettings(cfg, os.Getenv)}
				if rec, err = f.record(ctx, since); err != nil {
					return fmt.Errorf("data-flows: %w", err)
				}
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(rec)
			}
			_, err = fmt.Fprint(cmd.OutOrStdout(), rec.Markdown())
			return err
		},
	}
	cmd.Flags().DurationVar(&since, "since", dataflow.DefaultWindow, "the window, up to now")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the record as JSON")
	cmd.Flags().BoolVar(&local, "local", false, "open the store directly instead of asking a running server")
	return cmd
}

var (
	descFlowItems = prometheus.NewDesc("conductor_shadow_data_flow_items_total",
		"Items this process's exporters delivered outside the platform since start, by kind (otlp: spans, kafka: messages, "+
			"webhook and email: notices), recipient and host: the exporters' part of the record of data flows.", []string{"kind", "recipient", "host"}, nil)
	descFlowFailed = prometheus.NewDesc("conductor_shadow_data_flow_failed_items_total",
		"Items a recipient did not take (failed exports), by kind, recipient and host.", []string{"kind", "recipient", "host"}, nil)
	descFlowBytes = prometheus.NewDesc("conductor_shadow_data_flow_sent_bytes_total",
		"Body bytes this process's exporters sent outside the platform since start, by kind, recipient and host.", []string{"kind", "recipient", "host"}, nil)
	descFlowFlushFailures = prometheus.NewDesc("conductor_shadow_data_flow_flush_failures_total",
		"Writes of the exporters' counts to the store that failed (the counts are kept and written by the next flush).", nil, nil)
)

// flowsCollector turns the flow meter's counts into Prometheus samples.
type flowsCollector struct{ m *dataflow.Meter }

func (flowsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descFlowItems, descFlowFailed, descFlowBytes, descFlowFlushFailures} {
		ch <- d
	}
}

func (c flowsCollector) Collect(ch chan<- prometheus.Metric) {
	for _, r := range c.m.Snapshot() {
		ch <- prometheus.MustNewConstMetric(descFlowItems, prometheus.CounterValue, float64(r.Items), r.Kind, r.Recipient, r.Host)
		ch <- prometheus.MustNewConstMetric(descFlowFailed, prometheus.CounterValue, float64(r.FailedItems), r.Kind, r.Recipient, r.Host)
		ch <- prometheus.MustNewConstMetric(descFlowBytes, prometheus.CounterValue, float64(r.SentBytes), r.Kind, r.Recipient, r.Host)
	}
	ch <- prometheus.MustNewConstMetric(descFlowFlushFailures, prometheus.CounterValue, float64(c.m.FlushFailures()))
}
