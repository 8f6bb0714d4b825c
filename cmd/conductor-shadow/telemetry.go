package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploghttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/conductor-shadow/conductor-shadow/cmd/internal/platform"
	"github.com/conductor-shadow/conductor-shadow/store/dataflow"
)

// The record of data flows' names of the OTLP receiver's two endpoints.
const (
	otlpRecipient     = "traces"
	otlpLogsRecipient = "logs"
)

// otlpExportTimeout bounds one OTLP/HTTP export request (the exporter's own
// default).
const otlpExportTimeout = 10 * time.Second

// newTracerProvider returns a no-op provider unless cfg.OTLPEndpoint is set, in
// which case spans go to that OTLP/HTTP receiver (protobuf, POST /v1/traces) in
// batches: host:port means plain HTTP, an http:// or https:// URL is used as
// given (its path, when not empty, replacing /v1/traces). Every export is
// counted in flows (the record of data flows: spans delivered, with and
// without prompt content, failed, HTTP requests and bytes; nil counts
// nothing). The returned shutdown flushes and stops the exporter.
func newTracerProvider(ctx context.Context, cfg platform.TelemetryConfig, flows *dataflow.Meter) (trace.TracerProvider, func(context.Context) error, error) {
	if cfg.OTLPEndpoint == "" {
		return noop.NewTracerProvider(), func(context.Context) error { return nil }, nil
	}
	host := otlpHost(cfg.OTLPEndpoint)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	client := &http.Client{Timeout: otlpExportTimeout, Transport: countingTransport{base: tr, flows: flows, kind: dataflow.KindOTLP, recipient: otlpRecipient, host: host}}
	opts := []otlptracehttp.Option{otlptracehttp.WithEndpoint(cfg.OTLPEndpoint), otlptracehttp.WithInsecure(), otlptracehttp.WithHTTPClient(client)}
	if strings.HasPrefix(cfg.OTLPEndpoint, "http://") || strings.HasPrefix(cfg.OTLPEndpoint, "https://") {
		u, err := url.Parse(cfg.OTLPEndpoint)
		if err != nil {
			return nil, nil, fmt.Errorf("telemetry: otlp_endpoint %q: %w", cfg.OTLPEndpoint, err)
		}
		if u.Path == "" || u.Path == "/" {
			u.Path = "/v1/traces"
		}
		opts = []otlptracehttp.Option{otlptracehttp.WithEndpointURL(u.String()), otlptracehttp.WithHTTPClient(client)}
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("telemetry: OTLP exporter for %s: %w", cfg.OTLPEndpoint, err)
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(countingExporter{SpanExporter: exp, flows: flows, host: host}),
		sdktrace.WithResource(resource.NewWithAttributes(semconv.SchemaURL, semconv.ServiceName(cfg.ServiceName))),
	)
	return tp, tp.Shutdown, nil
}

// newLoggerProvider returns nil unless cfg.OTLPEndpoint is set, in which case
// log events (live judging's gen_ai.evaluation.result) go to the same OTLP/HTTP
// receiver as the spans (protobuf, POST /v1/logs) in batches: host:port means
// plain HTTP, an http:// or https:// URL is used with /v1/logs as its path.
// Every export is counted in flows (kind otlp_logs: events delivered, those
// carrying the judge's replies with telemetry.capture_content, failed, HTTP
// requests and bytes; nil counts nothing). The returned shutdown flushes and
// stops the exporter.
func newLoggerProvider(ctx context.Context, cfg platform.TelemetryConfig, flows *dataflow.Meter) (*sdklog.LoggerProvider, error) {
	if cfg.OTLPEndpoint == "" {
		return nil, nil
	}
	host := otlpHost(cfg.OTLPEndpoint)
	client := &http.Client{Timeout: otlpExportTimeout,
		Transport: countingTransport{base: http.DefaultTransport.(*http.Transport).Clone(), flows: flows, kind: dataflow.KindOTLPLogs, recipient: otlpLogsRecipient, host: host}}
	opts := []otlploghttp.Option{otlploghttp.WithEndpoint(cfg.OTLPEndpoint), otlploghttp.WithInsecure(), otlploghttp.WithHTTPClient(client)}
	if strings.HasPrefix(cfg.OTLPEndpoint, "http://") || strings.HasPrefix(cfg.OTLPEndpoint, "https://") {
		u, err := url.Parse(cfg.OTLPEndpoint)
		if err != nil {
			return nil, fmt.Errorf("telemetry: otlp_endpoint %q: %w", cfg.OTLPEndpoint, err)
		}
		u.Path = "/v1/logs"
		opts = []otlploghttp.Option{otlploghttp.WithEndpointURL(u.String()), otlploghttp.WithHTTPClient(client)}
	}
	exp, err := otlploghttp.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("telemetry: OTLP log exporter for %s: %w", cfg.OTLPEndpoint, err)
	}
	return sdklog.NewLoggerProvider(
		sdklog.WithProcessor(sdklog.NewBatchProcessor(countingLogExporter{Exporter: exp, flows: flows, host: host, content: cfg.CaptureContent})),
		sdklog.WithResource(resource.NewWithAttributes(semconv.SchemaURL, semconv.ServiceName(cfg.ServiceName))),
	), nil
}

// countingLogExporter counts the log records each export delivered or
// failed; with content (telemetry.capture_content) every record carries the
// judge's replies.
type countingLogExporter struct {
	sdklog.Exporter
	flows   *dataflow.Meter
	host    string
	content bool
}

func (e countingLogExporter) Export(ctx context.Context, records []sdklog.Record) error {
	err := e.Exporter.Export(ctx, records)
	d := dataflow.Delta{}
	if err != nil {
		d.FailedItems = int64(len(records))
	} else {
		d.Items = int64(len(records))
		if e.content {
			d.ContentItems = d.Items
		}
	}
	e.flows.Add(dataflow.KindOTLPLogs, otlpLogsRecipient, e.host, d)
	return err
}

// otlpHost is the host[:port] of an OTLP endpoint (host:port, or a URL whose
// path and query are left out).
func otlpHost(endpoint string) string {
	if strings.Contains(endpoint, "://") {
		if u, err := url.Parse(endpoint); err == nil {
			return u.Host
		}
		return ""
	}
	return endpoint
}

// countingExporter counts the spans each export delivered (and, of them,
// those carrying prompts or answers: telemetry.capture_content) or failed.
type countingExporter struct {
	sdktrace.SpanExporter
	flows *dataflow.Meter
	host  string
}

func (e countingExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	err := e.SpanExporter.ExportSpans(ctx, spans)
	d := dataflow.Delta{}
	if err != nil {
		d.FailedItems = int64(len(spans))
	} else {
		d.Items = int64(len(spans))
		for _, s := range spans {
			if hasContent(s) {
				d.ContentItems++
			}
		}
	}
	e.flows.Add(dataflow.KindOTLP, otlpRecipient, e.host, d)
	return err
}

// hasContent reports a span carrying prompt or answer text
// (gen_ai.input.messages, gen_ai.output.messages: shadow.Telemetry.CaptureContent).
func hasContent(s sdktrace.ReadOnlySpan) bool {
	for _, kv := range s.Attributes() {
		if kv.Key == semconv.GenAIInputMessagesKey || kv.Key == semconv.GenAIOutputMessagesKey {
			return true
		}
	}
	return false
}

// countingTransport counts an OTLP exporter's HTTP requests (retries
// included) and their body bytes for its recipient.
type countingTransport struct {
	base                  http.RoundTripper
	flows                 *dataflow.Meter
	kind, recipient, host string
}

func (t countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.ContentLength >= 0 || r.Body == nil {
		t.flows.Add(t.kind, t.recipient, t.host, dataflow.Delta{Requests: 1, SentBytes: max(r.ContentLength, 0)})
		return t.base.RoundTrip(r)
	}
	// A compressed body of unknown length: counted as the transport reads it.
	t.flows.Add(t.kind, t.recipient, t.host, dataflow.Delta{Requests: 1})
	r = r.Clone(r.Context())
	r.Body = &countedBody{ReadCloser: r.Body, done: func(n int64) {
		t.flows.Add(t.kind, t.recipient, t.host, dataflow.Delta{SentBytes: n})
	}}
	return t.base.RoundTrip(r)
}

// countedBody hands the bytes read through it to done when it is closed.
type countedBody struct {
	io.ReadCloser
	n    int64
	once sync.Once
	done func(int64)
}

func (b *countedBody) Read(p []byte) (int, error) {
	k, err := b.ReadCloser.Read(p)
	b.n += int64(k)
	return k, err
}

func (b *countedBody) Close() error {
	b.once.Do(func() { b.done(b.n) })
	return b.ReadCloser.Close()
}
