//go:build linux

package hostproc

import (
	"errors"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/internal/testkit/hostsim"
	"github.com/zeoruntime/runtimeipc/manifest"
)

// discover runs describe, doctor and capabilities (doc/protocol.md,
// “Static discovery”): the binding is read from --binding-fd, validated
// without importing anything, and every failure is protocol_error with a null
// binding.
func (h *host) discover(a args) int {
	switch h.sc {
	case scGarbage:
		h.write([]byte("not JSON\n"))
		return 0
	case scExit1:
		return 1
	}
	if h.sc == scReport {
		raw, _ := readFD(a.bindingFD)
		return h.emitJSON(h.report(raw, nil, -1))
	}
	if a.bindingFD < 3 {
		return h.emit(hostsim.ProtocolErrorResult())
	}
	raw, err := readFD(a.bindingFD)
	if err != nil {
		return h.emit(hostsim.ProtocolErrorResult())
	}
	var b manifest.ProviderBinding
	if err := canon.Unmarshal(raw, &b); err != nil {
		return h.emit(hostsim.ProtocolErrorResult())
	}
	if err := manifest.ValidateBinding(b); err != nil {
		return h.emit(hostsim.ProtocolErrorResult())
	}
	out, err := discovery(a, b)
	if err != nil {
		return h.emit(hostsim.ProtocolErrorResult())
	}
	if h.sc == scLie {
		out["version"] = "9.9.9"
		out["next_offset"] = int64(99)
		out["capability"] = map[string]any{}
	}
	return h.emitJSON(out)
}

func discovery(a args, b manifest.ProviderBinding) (map[string]any, error) {
	switch a.command {
	case "describe", "doctor":
		return map[string]any{
			"authorized": false, "distribution": b.Distribution, "manifest_digest": b.ManifestDigest,
			"protocol_version": int64(1), "readiness": "static_inventory_valid", "state": "succeeded",
			"version": b.Version,
		}, nil
	}
	switch a.detail {
	case "list":
		page, err := manifest.Paginate(b.Manifests, a.limit, a.offset)
		if err != nil {
			return nil, err
		}
		return map[string]any{
			"capabilities": page.Capabilities, "next_offset": page.NextOffset,
			"protocol_version": int64(1), "state": "succeeded",
		}, nil
	case "describe":
		m, err := manifest.Describe(b.Manifests, a.identity)
		if err != nil {
			return nil, err
		}
		return map[string]any{"capability": m, "protocol_version": int64(1), "state": "succeeded"}, nil
	}
	return nil, errors.New("capabilities needs list or describe")
}
