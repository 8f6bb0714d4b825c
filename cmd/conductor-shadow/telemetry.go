package main

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploghttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/conductor-shadow/conductor-shadow/cmd/internal/platform"
)

// newTracerProvider returns a no-op provider unless cfg.OTLPEndpoint is set, in
// which case spans go to that OTLP/HTTP receiver (protobuf, POST /v1/traces) in
// batches: host:port means plain HTTP, an http:// or https:// URL is used as
// given (its path, when not empty, replacing /v1/traces). The returned shutdown
// flushes and stops the exporter.
func newTracerProvider(ctx context.Context, cfg platform.TelemetryConfig) (trace.TracerProvider, func(context.Context) error, error) {
	if cfg.OTLPEndpoint == "" {
		return noop.NewTracerProvider(), func(context.Context) error { return nil }, nil
	}
	opts := []otlptracehttp.Option{otlptracehttp.WithEndpoint(cfg.OTLPEndpoint), otlptracehttp.WithInsecure()}
	if strings.HasPrefix(cfg.OTLPEndpoint, "http://") || strings.HasPrefix(cfg.OTLPEndpoint, "https://") {
		u, err := url.Parse(cfg.OTLPEndpoint)
		if err != nil {
			return nil, nil, fmt.Errorf("telemetry: otlp_endpoint %q: %w", cfg.OTLPEndpoint, err)
		}
		if u.Path == "" || u.Path == "/" {
			u.Path = "/v1/traces"
		}
		opts = []otlptracehttp.Option{otlptracehttp.WithEndpointURL(u.String())}
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("telemetry: OTLP exporter for %s: %w", cfg.OTLPEndpoint, err)
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(resource.NewWithAttributes(semconv.SchemaURL, semconv.ServiceName(cfg.ServiceName))),
	)
	return tp, tp.Shutdown, nil
}

// newLoggerProvider returns nil unless cfg.OTLPEndpoint is set, in which case
// log events (live judging's gen_ai.evaluation.result) go to the same OTLP/HTTP
// receiver as the spans (protobuf, POST /v1/logs) in batches: host:port means
// plain HTTP, an http:// or https:// URL is used with /v1/logs as its path.
// The returned shutdown flushes and stops the exporter.
func newLoggerProvider(ctx context.Context, cfg platform.TelemetryConfig) (*sdklog.LoggerProvider, error) {
	if cfg.OTLPEndpoint == "" {
		return nil, nil
	}
	opts := []otlploghttp.Option{otlploghttp.WithEndpoint(cfg.OTLPEndpoint), otlploghttp.WithInsecure()}
	if strings.HasPrefix(cfg.OTLPEndpoint, "http://") || strings.HasPrefix(cfg.OTLPEndpoint, "https://") {
		u, err := url.Parse(cfg.OTLPEndpoint)
		if err != nil {
			return nil, fmt.Errorf("telemetry: otlp_endpoint %q: %w", cfg.OTLPEndpoint, err)
		}
		u.Path = "/v1/logs"
		opts = []otlploghttp.Option{otlploghttp.WithEndpointURL(u.String())}
	}
	exp, err := otlploghttp.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("telemetry: OTLP log exporter for %s: %w", cfg.OTLPEndpoint, err)
	}
	return sdklog.NewLoggerProvider(
		sdklog.WithProcessor(sdklog.NewBatchProcessor(exp)),
		sdklog.WithResource(resource.NewWithAttributes(semconv.SchemaURL, semconv.ServiceName(cfg.ServiceName))),
	), nil
}
