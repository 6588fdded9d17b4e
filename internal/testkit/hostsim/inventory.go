package hostsim

import (
	"fmt"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/ipc"
	"github.com/zeoruntime/runtimeipc/manifest"
)

// The simulated installation when the environment names none (see package
// hostproc, “Environment”): a binding the simulated host accepts has
// python_version DefaultPythonVersion and names distribution
// DefaultDistribution at DefaultVersion.
const (
	DefaultPythonVersion = "3.14.0"
	DefaultDistribution  = "zeocore"
	DefaultVersion       = "0.11.0"
)

// DemoFactory is the factory the demo binding names; the simulated host
// never imports it.
const DemoFactory = "demo_provider:factory"

// demoManifests are the demo inventory's manifests in the lax form
// upstream accepts (string ids, nulls and defaults of nested objects
// omitted); DemoManifests materializes them.
var demoManifests = [...]string{
	`{"id": "example.echo@1.0.0",
	  "description": "Answers its text: the smallest capability, with no effects.",
	  "request_schema": {"type": "object", "title": "EchoRequest", "additionalProperties": false,
	    "properties": {"text": {"type": "string", "title": "Text"}}, "required": ["text"]},
	  "response_schema": {"type": "object", "title": "EchoResponse",
	    "properties": {"text": {"type": "string", "title": "Text"}}, "required": ["text"]},
	  "examples": [{"request": {"text": "hello"}, "response": {"text": "hello"}}],
	  "error_codes": [],
	  "effects": {"kinds": ["read"]},
	  "requirements": {}, "tags": [], "metadata": {}, "deprecation": {}}`,
	`{"id": "example.two_effects@1.0.0",
	  "description": "Requests two governed effects through runtime.effects (effect-1 prepare, effect-2 commit on connection-a) and answers their receipts.",
	  "request_schema": {"type": "object", "title": "EffectsRequest", "additionalProperties": false,
	    "properties": {"target": {"type": "string", "title": "Target"}}, "required": ["target"]},
	  "response_schema": {"type": "object", "title": "EffectsResponse",
	    "properties": {"receipts": {"type": "array", "items": {"type": "string"}, "title": "Receipts"},
	      "target": {"type": "string", "title": "Target"}},
	    "required": ["target", "receipts"]},
	  "examples": [{"request": {"target": "doc-1"}}],
	  "error_codes": ["ZEO_DEMO_EFFECT_FAILED"],
	  "effects": {"kinds": ["write", "external_communication"]},
	  "requirements": {"services": ["runtime.effects"]},
	  "tags": ["demo", "effects"], "metadata": {}, "deprecation": {}}`,
	`{"id": "example.fail@1.0.0",
	  "description": "Always fails with ZEO_DEMO_DOMAIN_FAILURE: a business failure, not a protocol one.",
	  "request_schema": {"type": "object", "title": "FailRequest",
	    "properties": {"text": {"type": "string", "title": "Text"}}},
	  "response_schema": {"type": "object", "title": "FailResponse"},
	  "examples": [{"request": {}}],
	  "error_codes": ["ZEO_DEMO_DOMAIN_FAILURE"],
	  "effects": {"kinds": ["read"]},
	  "requirements": {}, "tags": [], "metadata": {}, "deprecation": {}}`,
}

// DemoManifests returns the demo inventory: example.echo@1.0.0 (no
// effects), example.two_effects@1.0.0 (two effects) and example.fail@1.0.0
// (a failed outcome), the capabilities the simulated host runs by those
// names. The result is fresh; the caller may modify it.
func DemoManifests() []manifest.CapabilityManifest {
	out := make([]manifest.CapabilityManifest, 0, len(demoManifests))
	for i, s := range demoManifests {
		m, err := manifest.DecodeManifest([]byte(s))
		if err != nil {
			// The manifests are constants checked by this package's tests.
			panic(fmt.Sprintf("hostsim: demo manifest %d: %v", i, err))
		}
		out = append(out, m)
	}
	return out
}

// DemoBinding returns the binding of the demo inventory that the simulated
// host accepts with its default settings. Its environment digest is all
// zeros: the simulated host has no environment tree to verify. The result
// is fresh; the caller may modify it.
func DemoBinding() manifest.ProviderBinding {
	ms := DemoManifests()
	d, err := manifest.InventoryDigest(ms)
	if err != nil {
		panic(fmt.Sprintf("hostsim: demo inventory: %v", err))
	}
	return manifest.ProviderBinding{
		ProtocolVersion: ipc.ProtocolVersion, Distribution: DefaultDistribution, Version: DefaultVersion,
		PythonVersion: DefaultPythonVersion, EnvironmentDigest: canon.Digest("sha256:" + zeros64),
		Factory: DemoFactory, Manifests: ms, ManifestDigest: d, Generation: 1,
	}
}

const zeros64 = "0000000000000000000000000000000000000000000000000000000000000000"
