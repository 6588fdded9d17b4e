package launch_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"pgregory.net/rapid"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/internal/testkit/testvectors"
	"github.com/zeoruntime/runtimeipc/ipc"
	"github.com/zeoruntime/runtimeipc/launch"
)

// vectors is the part of the inline vectors these tests read.
type vectors struct {
	Upstream struct {
		ResultEnvelopeExitChecks struct {
			ValidPairs []struct {
				State             string `json:"state"`
				EffectDisposition string `json:"effect_disposition"`
				Exit              int    `json:"exit"`
			} `json:"valid_pairs"`
			MustRefuse []string `json:"must_refuse"`
		} `json:"result_envelope_exit_checks"`
		InvocationSequences struct {
			Cases []map[string]json.RawMessage `json:"cases"`
		} `json:"invocation_sequences"`
		CreatorHostScenarios struct {
			Cases [][]json.RawMessage `json:"cases"`
		} `json:"creator_host_scenarios"`
	} `json:"upstream_inline"`
	Derived struct {
		WorkedExample struct {
			LaunchContextCanonical string       `json:"launch_context_canonical"`
			LaunchDigest           canon.Digest `json:"launch_digest"`
			SuccessStdoutLine      string       `json:"success_stdout_line"`
			EchoManifestDigest     canon.Digest `json:"echo_manifest_digest"`
			RequestDigest          canon.Digest `json:"request_digest"`
		} `json:"worked_example"`
	} `json:"derived"`
}

// realHost is the part of a real-host transcript these tests read.
type realHost struct {
	Argv         []string `json:"argv"`
	FD3          string   `json:"fd3_bytes_utf8"`
	Stdin        string   `json:"stdin_bytes_utf8"`
	Stdout       string   `json:"stdout_utf8"`
	ExitStatus   int      `json:"exit_status"`
	LaunchDigest struct {
		SentByHost canon.Digest `json:"sent_by_host"`
	} `json:"launch_digest"`
}

// fixtureAttempt is the attempt of the derived worked example.
func fixtureAttempt(t testing.TB) ipc.AttemptBinding {
	t.Helper()
	v := testvectors.Inline[vectors](t)
	var ctx struct {
		Attempt ipc.AttemptBinding `json:"attempt"`
	}
	if err := json.Unmarshal([]byte(v.Derived.WorkedExample.LaunchContextCanonical), &ctx); err != nil {
		t.Fatal(err)
	}
	return ctx.Attempt
}

func envelope(t testing.TB, b *ipc.AttemptBinding, state, disposition string, extra map[string]any) []byte {
	t.Helper()
	m := map[string]any{"protocol_version": 1, "binding": b, "state": state, "effect_disposition": disposition}
	for k, v := range extra {
		m[k] = v
	}
	out, err := canon.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return append(out, '\n')
}

func TestParseResultWorkedExample(t *testing.T) {
	v := testvectors.Inline[vectors](t)
	want := fixtureAttempt(t)
	line := []byte(v.Derived.WorkedExample.SuccessStdoutLine)
	r, err := launch.ParseResult(line, 0, want)
	if err != nil {
		t.Fatal(err)
	}
	if r.State != launch.StateSucceeded || r.EffectDisposition != launch.EffectNone || r.ErrorCode != nil || r.Data != nil {
		t.Fatalf("result = %+v", r)
	}
	if diff := cmp.Diff([]string{"artifact-a"}, r.ArtifactRefs); diff != "" {
		t.Fatal(diff)
	}
	again, err := canon.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(append(again, '\n'), line) {
		t.Fatalf("re-encoded result differs from the stdout line:\n%s\n%s", again, line)
	}
}

func TestParseResultRealHost(t *testing.T) {
	for _, name := range []string{"s01_echo_success", "s02_two_effects_success", "s04_effect_needs_reconciliation"} {
		t.Run(name, func(t *testing.T) {
			rh := testvectors.RealHost[realHost](t, name)
			var ctx struct {
				Attempt ipc.AttemptBinding `json:"attempt"`
			}
			if err := json.Unmarshal([]byte(rh.FD3), &ctx); err != nil {
				t.Fatal(err)
			}
			r, err := launch.ParseResult([]byte(rh.Stdout), rh.ExitStatus, ctx.Attempt)
			if err != nil {
				t.Fatal(err)
			}
			if c, _ := r.State.ExitCode(); c != rh.ExitStatus {
				t.Fatalf("state %s, exit %d", r.State, rh.ExitStatus)
			}
			// Every other exit status is a disagreement.
			for _, code := range []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 127, -1} {
				if code == rh.ExitStatus {
					continue
				}
				if _, err := launch.ParseResult([]byte(rh.Stdout), code, ctx.Attempt); !errors.Is(err, launch.ErrBadResult) {
					t.Fatalf("exit %d accepted for state %s", code, r.State)
				}
			}
		})
	}
}

func TestParseResultUpstreamPairs(t *testing.T) {
	v := testvectors.Inline[vectors](t)
	want := fixtureAttempt(t)
	pairs := v.Upstream.ResultEnvelopeExitChecks.ValidPairs
	if len(pairs) != 4 {
		t.Fatalf("%d valid pairs in the vectors, want 4", len(pairs))
	}
	for _, p := range pairs {
		t.Run(p.State, func(t *testing.T) {
			env := envelope(t, &want, p.State, p.EffectDisposition, nil)
			r, err := launch.ParseResult(env, p.Exit, want)
			if err != nil {
				t.Fatal(err)
			}
			if string(r.State) != p.State || string(r.EffectDisposition) != p.EffectDisposition {
				t.Fatalf("got %+v", r)
			}
		})
	}
}

func TestParseResultRefusals(t *testing.T) {
	want := fixtureAttempt(t)
	other := want
	other.AttemptID = "new"
	stale := want
	stale.FencingGeneration = 2
	ok := envelope(t, &want, "succeeded", "none", nil)
	code := func(s string) map[string]any { return map[string]any{"error_code": s} }
	tests := []struct {
		name   string
		stdout []byte
		exit   int
		want   ipc.AttemptBinding
		err    error
	}{
		// The five must_refuse cases of result_envelope_exit_checks.
		{"exit 127", ok, 127, want, launch.ErrUnknownExitCode},
		{"expected attempt_id new", ok, 0, other, launch.ErrBindingMismatch},
		{"not JSON", []byte("not JSON"), 0, want, launch.ErrMalformedResult},
		{"1048577 bytes of x", bytes.Repeat([]byte("x"), 1048577), 0, want, launch.ErrResultTooLarge},
		{"succeeded with unknown", envelope(t, &want, "succeeded", "unknown", nil), 0, want, launch.ErrInvalidResult},
		// Each remaining outcome is distinct.
		{"signal", ok, -1, want, launch.ErrSignaled},
		{"exit 1", ok, 1, want, launch.ErrUnknownExitCode},
		{"empty", nil, 0, want, launch.ErrNoResult},
		{"two lines", append(bytes.Clone(ok), ok...), 0, want, launch.ErrNotOneLine},
		{"carriage return", append(bytes.TrimSuffix(bytes.Clone(ok), []byte("\n")), '\r', '\n'), 0, want, launch.ErrNotOneLine},
		{"exit disagrees", ok, 8, want, launch.ErrExitMismatch},
		{"protocol_error exits 0", envelope(t, &want, "protocol_error", "unknown", code("ZEO_HOST_PROTOCOL")), 0, want, launch.ErrExitMismatch},
		{"null binding", envelope(t, nil, "protocol_error", "unknown", code("ZEO_HOST_PROTOCOL")), 8, want, launch.ErrBindingMismatch},
		{"stale fence", ok, 0, stale, launch.ErrBindingMismatch},
		{"duplicate key", []byte(`{"state":"succeeded","state":"succeeded"}`), 0, want, launch.ErrMalformedResult},
		{"unsafe integer", []byte(`{"protocol_version":9007199254740993}`), 0, want, launch.ErrMalformedResult},
		{"unknown key", envelope(t, &want, "succeeded", "none", map[string]any{"extra": 1}), 0, want, launch.ErrInvalidResult},
		{"missing binding", []byte(`{"protocol_version":1,"state":"succeeded","effect_disposition":"none"}`), 0, want, launch.ErrInvalidResult},
		{"protocol_version 2", []byte(strings.Replace(string(ok), `"protocol_version":1`, `"protocol_version":2`, 1)), 0, want, launch.ErrInvalidResult},
		{"protocol_version 1.0", []byte(strings.Replace(string(ok), `"protocol_version":1`, `"protocol_version":1.0`, 1)), 0, want, launch.ErrInvalidResult},
		{"unknown state", envelope(t, &want, "done", "none", nil), 0, want, launch.ErrInvalidResult},
		{"failed without code", envelope(t, &want, "failed", "none", nil), 5, want, launch.ErrInvalidResult},
		{"succeeded with code", envelope(t, &want, "succeeded", "none", code("ZEO_X")), 0, want, launch.ErrInvalidResult},
		{"unknown disposition on failed", envelope(t, &want, "failed", "unknown", code("ZEO_X")), 5, want, launch.ErrInvalidResult},
		{"empty error code", envelope(t, &want, "failed", "none", code("")), 5, want, launch.ErrInvalidResult},
		{"long error code", envelope(t, &want, "failed", "none", code(strings.Repeat("é", 257))), 5, want, launch.ErrInvalidResult},
		{"long artifact ref", envelope(t, &want, "succeeded", "none", map[string]any{"artifact_refs": []string{strings.Repeat("a", 257)}}), 0, want, launch.ErrInvalidResult},
		{"bad binding digest", []byte(strings.Replace(string(ok), "sha256:3728", "sha256:X728", 1)), 0, want, launch.ErrInvalidResult},
		{"top-level array", []byte("[]\n"), 0, want, launch.ErrInvalidResult},
	}
	sentinels := []error{launch.ErrSignaled, launch.ErrUnknownExitCode, launch.ErrResultTooLarge, launch.ErrNoResult,
		launch.ErrNotOneLine, launch.ErrMalformedResult, launch.ErrInvalidResult, launch.ErrBindingMismatch, launch.ErrExitMismatch}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := launch.ParseResult(tt.stdout, tt.exit, tt.want)
			if !errors.Is(err, tt.err) || !errors.Is(err, launch.ErrBadResult) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			for _, s := range sentinels {
				if s != tt.err && errors.Is(err, s) {
					t.Fatalf("err %v also matches %v", err, s)
				}
			}
			var re *launch.ResultError
			if !errors.As(err, &re) {
				t.Fatalf("%T is not a *ResultError", err)
			}
			if re.ExitCode != tt.exit || re.Want != tt.want || len(re.Stdout) > 4096 {
				t.Fatalf("evidence = %+v", re)
			}
			// Stdout is read on every exit status: a line that decodes is
			// kept as evidence even when the process was killed or crashed.
			if bytes.Equal(tt.stdout, ok) && (re.Result == nil || re.Result.State != launch.StateSucceeded) {
				t.Fatalf("the decodable result line was not kept: %+v", re.Result)
			}
		})
	}
}

// TestParseResultExitMismatchCarriesBothSides checks that a disagreement is
// reported with the exit status seen and the one the state requires, and
// never resolved toward either.
func TestParseResultExitMismatchCarriesBothSides(t *testing.T) {
	want := fixtureAttempt(t)
	env := envelope(t, &want, "refused", "none", map[string]any{"error_code": "ZEO_HOST_SCOPE"})
	_, err := launch.ParseResult(env, 0, want)
	var re *launch.ResultError
	if !errors.As(err, &re) || !errors.Is(err, launch.ErrExitMismatch) {
		t.Fatalf("err = %v", err)
	}
	if re.ExitCode != 0 || re.WantExitCode != 3 || re.Result == nil || re.Result.State != launch.StateRefused {
		t.Fatalf("evidence = %+v", re)
	}
}

func TestExitCodes(t *testing.T) {
	want := map[launch.State]int{
		"succeeded": 0, "invalid_request": 2, "refused": 3, "unavailable": 4, "failed": 5, "cancelled": 6,
		"timed_out": 7, "protocol_error": 8, "queued": 10, "running": 10, "waiting_approval": 10, "needs_reconciliation": 10,
	}
	for s, c := range want {
		if got, ok := s.ExitCode(); !ok || got != c {
			t.Errorf("%s: %d %v, want %d", s, got, ok, c)
		}
	}
	if _, ok := launch.State("nope").ExitCode(); ok {
		t.Error("unknown state has an exit code")
	}
	for c := -1; c < 300; c++ {
		known := c == 0 || (c >= 2 && c <= 8) || c == 10
		if launch.KnownExitCode(c) != known {
			t.Errorf("KnownExitCode(%d) = %v", c, !known)
		}
	}
}

var allStates = []string{"succeeded", "invalid_request", "failed", "refused", "unavailable", "cancelled",
	"timed_out", "queued", "running", "waiting_approval", "needs_reconciliation", "protocol_error"}

// genResult draws an arbitrary envelope, coherent or not.
func genResult(want ipc.AttemptBinding) *rapid.Generator[map[string]any] {
	return rapid.Custom(func(t *rapid.T) map[string]any {
		m := map[string]any{
			"protocol_version":   1,
			"state":              rapid.SampledFrom(allStates).Draw(t, "state"),
			"effect_disposition": rapid.SampledFrom([]string{"none", "confirmed", "unknown"}).Draw(t, "disposition"),
		}
		if rapid.Bool().Draw(t, "null binding") {
			m["binding"] = nil
		} else {
			m["binding"] = want
		}
		if rapid.Bool().Draw(t, "has code") {
			m["error_code"] = rapid.StringMatching(`[A-Z_]{1,12}`).Draw(t, "code")
		}
		if rapid.Bool().Draw(t, "has refs") {
			m["artifact_refs"] = rapid.SliceOfN(rapid.StringMatching(`[a-z-]{1,8}`), 0, 3).Draw(t, "refs")
		}
		return m
	})
}

// TestParseResultModel checks ParseResult against an independent statement
// of the rules: an envelope is accepted exactly when it is coherent, its
// binding is the expected one and the exit status is its state's.
func TestParseResultModel(t *testing.T) {
	want := fixtureAttempt(t)
	rapid.Check(t, func(rt *rapid.T) {
		m := genResult(want).Draw(rt, "envelope")
		exit := rapid.SampledFrom([]int{-1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 127}).Draw(rt, "exit")
		line, err := canon.Marshal(m)
		if err != nil {
			rt.Fatal(err)
		}
		state := m["state"].(string)
		disp := m["effect_disposition"].(string)
		_, hasCode := m["error_code"]
		coherent := true
		switch state {
		case "succeeded":
			coherent = !hasCode && disp != "unknown"
		case "failed", "refused", "protocol_error", "unavailable", "timed_out", "invalid_request":
			coherent = hasCode
		}
		if disp == "unknown" && state != "needs_reconciliation" && state != "protocol_error" {
			coherent = false
		}
		wantExit, _ := launch.State(state).ExitCode()
		accept := exit >= 0 && coherent && m["binding"] != nil && exit == wantExit
		r, err := launch.ParseResult(append(line, '\n'), exit, want)
		if accept != (err == nil) {
			rt.Fatalf("accept = %v, err = %v for %s exit %d", accept, err, line, exit)
		}
		if err == nil {
			again, err := canon.Marshal(r)
			if err != nil {
				rt.Fatal(err)
			}
			if _, err := launch.ParseResult(again, exit, want); err != nil {
				rt.Fatalf("re-encoded result refused: %v", err)
			}
		}
	})
}

// hostResultSchema compiles host-result.schema.json, the upstream
// generated schema, with a loader that resolves nothing remote.
func hostResultSchema(t testing.TB) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(testvectors.File(t, "host-result.schema.json")))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("host-result.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("host-result.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// FuzzParseResult feeds arbitrary stdout to ParseResult. It must never
// panic; whatever it accepts must validate against the upstream JSON Schema,
// carry the expected binding, agree with the exit status, and parse again to
// the same result after canonical re-encoding.
func FuzzParseResult(f *testing.F) {
	v := testvectors.Inline[vectors](f)
	want := fixtureAttempt(f)
	schema := hostResultSchema(f)
	f.Add([]byte(v.Derived.WorkedExample.SuccessStdoutLine), 0)
	for _, name := range []string{"s01_echo_success", "s04_effect_needs_reconciliation"} {
		rh := testvectors.RealHost[realHost](f, name)
		f.Add([]byte(rh.Stdout), rh.ExitStatus)
	}
	for _, p := range v.Upstream.ResultEnvelopeExitChecks.ValidPairs {
		f.Add(envelope(f, &want, p.State, p.EffectDisposition, nil), p.Exit)
	}
	f.Add(envelope(f, nil, "protocol_error", "unknown", map[string]any{"error_code": "ZEO_HOST_PROTOCOL"}), 8)
	f.Add([]byte("not JSON"), 0)
	f.Add([]byte("{}\n{}\n"), 0)
	f.Fuzz(func(t *testing.T, stdout []byte, exit int) {
		r, err := launch.ParseResult(stdout, exit, want)
		if err != nil {
			var re *launch.ResultError
			if !errors.As(err, &re) || !errors.Is(err, launch.ErrBadResult) {
				t.Fatalf("untyped error %T: %v", err, err)
			}
			return
		}
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(stdout))
		if err != nil {
			t.Fatalf("accepted bytes encoding/json refuses: %v", err)
		}
		if err := schema.Validate(inst); err != nil {
			t.Fatalf("accepted result fails the upstream schema: %v", err)
		}
		if r.Binding == nil || *r.Binding != want {
			t.Fatal("accepted a foreign binding")
		}
		if c, _ := r.State.ExitCode(); c != exit {
			t.Fatal("accepted an exit status disagreement")
		}
		again, err := canon.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		r2, err := launch.ParseResult(again, exit, want)
		if err != nil {
			t.Fatalf("canonical re-encoding refused: %v", err)
		}
		if diff := cmp.Diff(r, r2); diff != "" {
			t.Fatal(diff)
		}
	})
}
