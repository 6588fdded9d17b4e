package launch_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/internal/testkit/testvectors"
	"github.com/zeoruntime/runtimeipc/launch"
)

func TestLaunchDigestWorkedExample(t *testing.T) {
	v := testvectors.Inline[vectors](t)
	we := v.Derived.WorkedExample
	c, err := launch.DecodeContext([]byte(we.LaunchContextCanonical))
	if err != nil {
		t.Fatal(err)
	}
	enc, err := c.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if string(enc.Bytes) != we.LaunchContextCanonical {
		t.Fatalf("re-encoded context differs:\n%s\n%s", enc.Bytes, we.LaunchContextCanonical)
	}
	if enc.LaunchDigest != we.LaunchDigest {
		t.Fatalf("launch digest %s, want %s", enc.LaunchDigest, we.LaunchDigest)
	}
}

func TestLaunchDigestRealHost(t *testing.T) {
	for _, name := range []string{"s01_echo_success", "s02_two_effects_success", "s04_effect_needs_reconciliation"} {
		t.Run(name, func(t *testing.T) {
			rh := testvectors.RealHost[realHost](t, name)
			c, err := launch.DecodeContext([]byte(rh.FD3))
			if err != nil {
				t.Fatal(err)
			}
			d, err := c.LaunchDigest()
			if err != nil {
				t.Fatal(err)
			}
			if d != rh.LaunchDigest.SentByHost {
				t.Fatalf("launch digest %s, the host sent %s", d, rh.LaunchDigest.SentByHost)
			}
		})
	}
}

// TestContextDefaultsMaterialized checks that a context written with only its
// required keys encodes with every default present, and hashes like the
// fully written one.
func TestContextDefaultsMaterialized(t *testing.T) {
	v := testvectors.Inline[vectors](t)
	full, err := launch.DecodeContext([]byte(v.Derived.WorkedExample.LaunchContextCanonical))
	if err != nil {
		t.Fatal(err)
	}
	sparse := full
	sparse.ProtocolVersion = 0
	sparse.Services, sparse.Credentials, sparse.Binaries, sparse.NetworkHosts = nil, nil, nil, nil
	sparse.MaxMessageBytes, sparse.RPCTimeoutMS = 0, 0
	enc, err := sparse.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if enc.LaunchDigest != v.Derived.WorkedExample.LaunchDigest {
		t.Fatalf("sparse context digests to %s", enc.LaunchDigest)
	}
	for _, key := range []string{`"services":[]`, `"max_message_bytes":1048576`, `"rpc_timeout_ms":5000`, `"total_dispatch_budget":0`, `"filesystem_write":false`} {
		if !strings.Contains(string(enc.Bytes), key) {
			t.Errorf("encoded context lacks %s", key)
		}
	}
}

func TestContextValidate(t *testing.T) {
	v := testvectors.Inline[vectors](t)
	base, err := launch.DecodeContext([]byte(v.Derived.WorkedExample.LaunchContextCanonical))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		mutate func(c *launch.LaunchContext)
	}{
		{"protocol 2", func(c *launch.LaunchContext) { c.ProtocolVersion = 2 }},
		{"empty bootstrap id", func(c *launch.LaunchContext) { c.BootstrapID = "" }},
		{"long workspace", func(c *launch.LaunchContext) { c.Workspace = strings.Repeat("w", 257) }},
		{"zero deadline", func(c *launch.LaunchContext) { c.DeadlineUnixMS = 0 }},
		{"small frames", func(c *launch.LaunchContext) { c.MaxMessageBytes = 1023 }},
		{"big frames", func(c *launch.LaunchContext) { c.MaxMessageBytes = 1<<20 + 1 }},
		{"slow rpc", func(c *launch.LaunchContext) { c.RPCTimeoutMS = 30001 }},
		{"negative budget", func(c *launch.LaunchContext) { c.TotalDispatchBudget = -1 }},
		{"empty service", func(c *launch.LaunchContext) { c.Services = []string{""} }},
		{"fence 0", func(c *launch.LaunchContext) { c.Attempt.FencingGeneration = 0 }},
		{"bad request digest", func(c *launch.LaunchContext) { c.Attempt.RequestDigest = "sha256:00" }},
		{"inventory digest", func(c *launch.LaunchContext) {
			c.Provider.ManifestDigest = canon.Digest("sha256:" + strings.Repeat("0", 64))
		}},
		{"generation 0", func(c *launch.LaunchContext) { c.Provider.Generation = 0 }},
		{"huge context", func(c *launch.LaunchContext) {
			c.AdmittedCapabilities = make([]string, 5000)
			for i := range c.AdmittedCapabilities {
				c.AdmittedCapabilities[i] = strings.Repeat("a", 256)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := base
			c.Provider.Manifests = append(c.Provider.Manifests[:0:0], c.Provider.Manifests...)
			tt.mutate(&c)
			if _, err := c.Encode(); !errors.Is(err, launch.ErrInvalidContext) {
				t.Fatalf("Encode err = %v", err)
			}
		})
	}
	for _, doc := range []string{
		strings.Replace(v.Derived.WorkedExample.LaunchContextCanonical, `"max_message_bytes":1048576`, `"max_message_bytes":0`, 1),
		strings.Replace(v.Derived.WorkedExample.LaunchContextCanonical, `"binaries":[],`, `"binaries":[],"extra":1,`, 1),
		strings.Replace(v.Derived.WorkedExample.LaunchContextCanonical, `"bootstrap_id":"bootstrap-a",`, ``, 1),
		strings.Replace(v.Derived.WorkedExample.LaunchContextCanonical, `"network_allowed":false`, `"network_allowed":0`, 1),
	} {
		if _, err := launch.DecodeContext([]byte(doc)); !errors.Is(err, launch.ErrInvalidContext) {
			t.Errorf("DecodeContext accepted a bad document: %v", err)
		}
	}
}

// TestContextEncoderEncodesAsEncode holds a ContextEncoder to
// LaunchContext.Encode: the same bytes, launch digest and materialized
// context for every context of its provider, whatever the other fields
// (rapid draws them), and the same refusal of an invalid one.
func TestContextEncoderEncodesAsEncode(t *testing.T) {
	v := testvectors.Inline[vectors](t)
	base, err := launch.DecodeContext([]byte(v.Derived.WorkedExample.LaunchContextCanonical))
	if err != nil {
		t.Fatal(err)
	}
	e, err := launch.NewContextEncoder(base.Provider)
	if err != nil {
		t.Fatal(err)
	}
	id := rapid.StringMatching(`[a-z0-9_.-]{1,12}`)
	ids := rapid.SliceOfN(id, 0, 3)
	rapid.Check(t, func(rt *rapid.T) {
		c := base
		c.Attempt.AttemptID = id.Draw(rt, "attempt")
		c.Attempt.FencingGeneration = rapid.Int64Range(0, 1<<40).Draw(rt, "generation")
		c.BootstrapID = rapid.StringMatching(`[a-z0-9_-]{0,8}`).Draw(rt, "bootstrap")
		c.DeadlineUnixMS = rapid.Int64Range(-1, 1<<45).Draw(rt, "deadline")
		c.TotalDispatchBudget = rapid.Int64Range(-1, 100).Draw(rt, "budget")
		c.Services, c.Credentials, c.NetworkHosts = ids.Draw(rt, "services"), ids.Draw(rt, "credentials"), ids.Draw(rt, "hosts")
		c.NetworkAllowed = rapid.Bool().Draw(rt, "network")
		c.RPCTimeoutMS = rapid.IntRange(0, 40000).Draw(rt, "rpc")
		want, werr := c.Encode()
		got, gerr := e.Encode(c)
		if (werr == nil) != (gerr == nil) || (werr != nil && werr.Error() != gerr.Error()) {
			rt.Fatalf("Encode err = %v, ContextEncoder.Encode err = %v", werr, gerr)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			rt.Fatalf("ContextEncoder.Encode differs from Encode (-want +got):\n%s", diff)
		}
	})
}

// TestContextEncoderProvider checks that a ContextEncoder encodes only its
// own provider's contexts: a copy of the binding, or an equal one decoded
// again, is its; a binding that differs in any field is refused, and so is
// an invalid binding when the encoder is made.
func TestContextEncoderProvider(t *testing.T) {
	v := testvectors.Inline[vectors](t)
	doc := []byte(v.Derived.WorkedExample.LaunchContextCanonical)
	base, err := launch.DecodeContext(doc)
	if err != nil {
		t.Fatal(err)
	}
	e, err := launch.NewContextEncoder(base.Provider)
	if err != nil {
		t.Fatal(err)
	}
	again, err := launch.DecodeContext(doc) // equal manifests, another slice
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Encode(again); err != nil {
		t.Fatalf("an equal provider decoded again: %v", err)
	}
	tests := []struct {
		name   string
		mutate func(c *launch.LaunchContext)
	}{
		{"version", func(c *launch.LaunchContext) { c.Provider.Version = "0.12.0" }},
		{"python", func(c *launch.LaunchContext) { c.Provider.PythonVersion = "3.15.0" }},
		{"generation", func(c *launch.LaunchContext) { c.Provider.Generation++ }},
		{"no manifests", func(c *launch.LaunchContext) { c.Provider.Manifests = nil }},
		{"manifest changed", func(c *launch.LaunchContext) { c.Provider.Manifests[0].Description += "!" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := launch.DecodeContext(doc)
			if err != nil {
				t.Fatal(err)
			}
			tt.mutate(&c)
			if _, err := e.Encode(c); !errors.Is(err, launch.ErrInvalidContext) {
				t.Fatalf("Encode err = %v", err)
			}
		})
	}
	bad := base.Provider
	bad.ManifestDigest = canon.Digest("sha256:" + strings.Repeat("0", 64))
	if _, err := launch.NewContextEncoder(bad); !errors.Is(err, launch.ErrInvalidContext) {
		t.Fatalf("NewContextEncoder of a binding with a wrong manifest digest: %v", err)
	}
}
