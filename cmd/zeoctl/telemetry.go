package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdoutmetric"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// telemetryUsage is the -telemetry flag's help.
const telemetryUsage = "export the Supervisor's spans and metrics (doc/design.md, “Telemetry”): " +
	"`stdout` or stderr (one JSON object per span as it ends, the metrics when the command ends), " +
	"or otlp (to the endpoint the standard OTEL_EXPORTER_OTLP_* variables name; protocol http/protobuf, " +
	"or grpc with OTEL_EXPORTER_OTLP_PROTOCOL=grpc); default none"

// telemetryFlushTimeout bounds the export of what is left when a command
// ends, even after an interrupt.
const telemetryFlushTimeout = 5 * time.Second

// telemetry is the providers a command's Supervisors report to, made
// from -telemetry. A nil *telemetry gives nil providers: none.
type telemetry struct {
	tracers *sdktrace.TracerProvider
	meters  *sdkmetric.MeterProvider
}

// tracerProvider and meterProvider are for supervise.Config: nil, not a
// nil pointer in an interface, when telemetry is off.
func (t *telemetry) tracerProvider() trace.TracerProvider {
	if t == nil {
		return nil
	}
	return t.tracers
}

func (t *telemetry) meterProvider() metric.MeterProvider {
	if t == nil {
		return nil
	}
	return t.meters
}

// withTelemetry gives c the -telemetry flag: its run gets the providers
// in env.telemetry, and what is left to export is flushed when it ends.
// stdoutTaken names a command whose standard output is a protocol, which
// refuses -telemetry stdout.
func withTelemetry(c *command, stdoutTaken bool) *command {
	inner := c.flags
	c.flags = func(fs *flag.FlagSet) runFunc {
		kind := fs.String("telemetry", "", telemetryUsage)
		run := inner(fs)
		return func(ctx context.Context, e *env, args []string) (err error) {
			if *kind == "stdout" && stdoutTaken {
				return usagef("-telemetry stdout would mix the telemetry into the protocol on standard output: use -telemetry stderr or otlp")
			}
			t, err := startTelemetry(ctx, *kind, e)
			if err != nil {
				return err
			}
			if t != nil {
				e.telemetry = t
				defer func() {
					if ferr := t.shutdown(); ferr != nil {
						e.progress("warning: telemetry: exporting what was left failed: %v", ferr)
					}
				}()
			}
			return run(ctx, e, args)
		}
	}
	return c
}

// startTelemetry returns the providers -telemetry kind names, or nil
// for none.
func startTelemetry(ctx context.Context, kind string, e *env) (*telemetry, error) {
	var spans sdktrace.SpanExporter
	var metrics sdkmetric.Exporter
	var err error
	switch kind {
	case "":
		return nil, nil
	case "stdout", "stderr":
		w := e.stdout
		if kind == "stderr" {
			w = e.stderr
		}
		spans, metrics, err = stdoutExporters(w)
	case "otlp":
		spans, metrics, err = otlpExporters(ctx)
	default:
		return nil, usagef("-telemetry %q: want stdout, stderr or otlp", kind)
	}
	if err != nil {
		return nil, fmt.Errorf("-telemetry %s: %w", kind, err)
	}
	// The service name is zeoctl unless OTEL_SERVICE_NAME or
	// OTEL_RESOURCE_ATTRIBUTES say otherwise.
	res, err := resource.New(ctx, resource.WithAttributes(attribute.String("service.name", "zeoctl")),
		resource.WithTelemetrySDK(), resource.WithFromEnv())
	if err != nil {
		return nil, fmt.Errorf("-telemetry %s: the resource from OTEL_RESOURCE_ATTRIBUTES: %w", kind, err)
	}
	t := &telemetry{meters: sdkmetric.NewMeterProvider(sdkmetric.WithResource(res),
		sdkmetric.WithReader(sdkmetric.NewPeriodicReader(metrics)))}
	if kind == "otlp" {
		t.tracers = sdktrace.NewTracerProvider(sdktrace.WithResource(res), sdktrace.WithBatcher(spans))
	} else {
		// Each span is written as it ends, in order with the command's
		// own output.
		t.tracers = sdktrace.NewTracerProvider(sdktrace.WithResource(res), sdktrace.WithSyncer(spans))
	}
	return t, nil
}

func stdoutExporters(w io.Writer) (sdktrace.SpanExporter, sdkmetric.Exporter, error) {
	spans, err := stdouttrace.New(stdouttrace.WithWriter(w))
	if err != nil {
		return nil, nil, err
	}
	metrics, err := stdoutmetric.New(stdoutmetric.WithWriter(w))
	if err != nil {
		return nil, nil, err
	}
	return spans, metrics, nil
}

// otlpExporters returns the OTLP exporters of the protocol the standard
// variables name (OTEL_EXPORTER_OTLP_{TRACES,METRICS}_PROTOCOL, else
// OTEL_EXPORTER_OTLP_PROTOCOL; http/protobuf when unset); the exporters
// read the endpoint, headers, TLS and timeout from the same variables.
func otlpExporters(ctx context.Context) (sdktrace.SpanExporter, sdkmetric.Exporter, error) {
	protocol := func(signal string) string {
		if p := os.Getenv("OTEL_EXPORTER_OTLP_" + signal + "_PROTOCOL"); p != "" {
			return p
		}
		if p := os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL"); p != "" {
			return p
		}
		return "http/protobuf"
	}
	var spans sdktrace.SpanExporter
	var metrics sdkmetric.Exporter
	var err error
	switch p := protocol("TRACES"); p {
	case "grpc":
		spans, err = otlptracegrpc.New(ctx)
	case "http/protobuf":
		spans, err = otlptracehttp.New(ctx)
	default:
		return nil, nil, fmt.Errorf("OTLP protocol %q for traces: want grpc or http/protobuf", p)
	}
	if err != nil {
		return nil, nil, err
	}
	switch p := protocol("METRICS"); p {
	case "grpc":
		metrics, err = otlpmetricgrpc.New(ctx)
	case "http/protobuf":
		metrics, err = otlpmetrichttp.New(ctx)
	default:
		err = fmt.Errorf("OTLP protocol %q for metrics: want grpc or http/protobuf", p)
	}
	if err != nil {
		spans.Shutdown(ctx)
		return nil, nil, err
	}
	return spans, metrics, nil
}

// shutdown exports what is left (the metrics, and spans not yet sent)
// and stops the providers, within telemetryFlushTimeout.
func (t *telemetry) shutdown() error {
	ctx, cancel := context.WithTimeout(context.Background(), telemetryFlushTimeout)
	defer cancel()
	return errors.Join(t.tracers.Shutdown(ctx), t.meters.Shutdown(ctx))
}
