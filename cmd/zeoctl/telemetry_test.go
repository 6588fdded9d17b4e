package main_test

import (
	"encoding/json"
	"io"
	"maps"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	collmetric "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	colltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// demoStates is how many Invoke calls 'zeoctl demo' makes, by the state
// each ends in: echo, two effects, the lost host's next attempt, the lost
// result, the held operation once approved and the uncertain one once
// resolved succeed; step 3 loses its host on purpose; step 5 is refused
// once and held once; step 6 needs reconciliation once.
var demoStates = map[string]float64{"succeeded": 6, "protocol_error": 1, "refused": 1, "waiting_approval": 1, "needs_reconciliation": 1}

// demoInvokes is how many Invoke calls 'zeoctl demo' makes.
const demoInvokes = 10

// TestTelemetryStdout: 'zeoctl demo -telemetry stdout' writes each span
// as a JSON line as it ends and the metrics when it ends: a zeo.invoke
// root per Invoke, every other span under one, no argument value in any,
// and the invocations counted by state.
func TestTelemetryStdout(t *testing.T) {
	t.Parallel()
	r := zeoctl(t, "demo", "-telemetry", "stdout")
	wantRun(t, r, 0, []string{"Done."}, nil)
	type span struct {
		Name        string
		SpanContext struct{ TraceID, SpanID string }
		Parent      struct{ SpanID string }
		Attributes  []struct {
			Key   string
			Value struct{ Value any }
		}
	}
	var spans []span
	var metrics string
	for _, line := range strings.Split(r.stdout, "\n") {
		switch {
		case strings.HasPrefix(line, `{"Name":`):
			var s span
			if err := json.Unmarshal([]byte(line), &s); err != nil {
				t.Fatalf("span line %q: %v", line, err)
			}
			spans = append(spans, s)
			if strings.Contains(line, `"hello"`) || strings.Contains(line, "doc-1") {
				t.Errorf("span %s carries an argument value: %s", s.Name, line)
			}
		case strings.HasPrefix(line, `{"Resource":`):
			metrics = line
		}
	}
	roots := map[string]bool{}
	for _, s := range spans {
		if s.Name == "zeo.invoke" {
			roots[s.SpanContext.TraceID] = true
		}
	}
	if len(roots) != demoInvokes {
		t.Errorf("%d zeo.invoke spans, want %d\n%s", len(roots), demoInvokes, r)
	}
	names := map[string]int{}
	for _, s := range spans {
		names[s.Name]++
		if !roots[s.SpanContext.TraceID] {
			t.Errorf("span %s is in no Invoke's trace", s.Name)
		}
	}
	for _, n := range []string{"zeo.attempt", "zeo.ipc.bootstrap", "zeo.ipc.invoke.admit", "zeo.ipc.effect.request",
		"zeo.ipc.result.publish", "zeo.dispatch", "zeo.ledger.launch_attempt", "zeo.ledger.confirm_effect"} {
		if names[n] == 0 {
			t.Errorf("no %s span; got %v", n, names)
		}
	}

	var rm struct {
		ScopeMetrics []struct {
			Metrics []struct {
				Name string
				Unit string
				Data struct {
					DataPoints []struct {
						Attributes []struct {
							Key   string
							Value struct{ Value any }
						}
						Value any
					}
				}
			}
		}
	}
	if err := json.Unmarshal([]byte(metrics), &rm); err != nil {
		t.Fatalf("metrics line %q: %v", metrics, err)
	}
	states := map[string]float64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != "zeo.runtime.invocations" {
				continue
			}
			for _, p := range m.Data.DataPoints {
				for _, a := range p.Attributes {
					if a.Key == "zeo.state" {
						states[a.Value.Value.(string)] += p.Value.(float64)
					}
				}
			}
		}
	}
	if !maps.Equal(states, demoStates) {
		t.Errorf("invocations by state %v\n%s", states, metrics)
	}
}

// TestTelemetryOTLP: 'zeoctl demo -telemetry otlp' sends the spans and
// the metrics to the OTLP/HTTP endpoint OTEL_EXPORTER_OTLP_ENDPOINT names.
func TestTelemetryOTLP(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	spans := map[string]int{}
	metrics := map[string]bool{}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil || r.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		switch r.URL.Path {
		case "/v1/traces":
			var req colltrace.ExportTraceServiceRequest
			if err := proto.Unmarshal(body, &req); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			for _, rs := range req.ResourceSpans {
				for _, ss := range rs.ScopeSpans {
					for _, s := range ss.Spans {
						spans[s.Name]++
					}
				}
			}
		case "/v1/metrics":
			var req collmetric.ExportMetricsServiceRequest
			if err := proto.Unmarshal(body, &req); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			for _, rm := range req.ResourceMetrics {
				for _, sm := range rm.ScopeMetrics {
					for _, m := range sm.Metrics {
						metrics[m.Name] = true
					}
				}
			}
		default:
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+ln.Addr().String())
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	r := zeoctl(t, "demo", "-telemetry", "otlp")
	wantRun(t, r, 0, []string{"Done."}, nil)
	if strings.Contains(r.stderr, "telemetry") {
		t.Errorf("a telemetry warning:\n%s", r)
	}
	mu.Lock()
	defer mu.Unlock()
	if spans["zeo.invoke"] != demoInvokes || spans["zeo.attempt"] == 0 || spans["zeo.dispatch"] == 0 {
		t.Errorf("spans received: %v", spans)
	}
	for _, m := range []string{"zeo.runtime.invocations", "zeo.runtime.invocation.duration", "zeo.runtime.effects",
		"zeo.runtime.effect_budget.used", "zeo.runtime.ledger.write.duration", "zeo.runtime.host.starts"} {
		if !metrics[m] {
			t.Errorf("metric %s not received; got %v", m, metrics)
		}
	}
}

// TestTelemetryFlag: an unknown exporter is a usage error, and mcp, whose
// standard output is its protocol, refuses stdout.
func TestTelemetryFlag(t *testing.T) {
	t.Parallel()
	r := zeoctl(t, "demo", "-telemetry", "jaeger")
	wantRun(t, r, 2, nil, []string{`-telemetry "jaeger": want stdout, stderr or otlp`})
	r = zeoctl(t, "mcp", "-simulated", "-ledger", "x.db", "-org", "o", "-project", "p", "-telemetry", "stdout")
	wantRun(t, r, 2, nil, []string{"use -telemetry stderr or otlp"})
	r = zeoctl(t, "help", "invoke")
	wantRun(t, r, 0, []string{"-telemetry stdout"}, nil)
}
