// Command pluginhost is the equivalent go-plugin peer of the launch
// benchmark: a Go plugin whose one call performs, in process, the work the
// simulated host executable does for the same invocation — strict parsing
// of the LaunchContext and the InvocationRequest, the scope check, binding
// and inventory validation (activation), request preparation against the
// request schema and the request-digest check, the echo capability,
// response validation against the response schema and the data digest —
// with the same packages (so the same start-up cost). What it leaves out is
// what only the ZEO protocol has: the Runtime's bootstrap, admit and
// publish decisions, which go-plugin has no counterpart for.
package main

import (
	"errors"
	"fmt"
	"slices"

	"github.com/hashicorp/go-plugin"

	"github.com/zeoruntime/runtimeipc/bench/pluginshared"
	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/ipc"
	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/manifest"
)

type host struct{}

// request is the InvocationRequest (doc/protocol.md, “Invocation request”).
type request struct {
	ProtocolVersion int            `json:"protocol_version"`
	CapabilityID    string         `json:"capability_id"`
	Arguments       map[string]any `json:"arguments"`
}

func (host) Invoke(a pluginshared.InvokeArgs) (pluginshared.InvokeReply, error) {
	var none pluginshared.InvokeReply
	lc, err := launch.DecodeContext(a.Context)
	if err != nil {
		return none, err
	}
	var req request
	if err := canon.Unmarshal(a.Request, &req); err != nil {
		return none, err
	}
	if req.ProtocolVersion != 1 || req.Arguments == nil {
		return none, errors.New("invalid InvocationRequest")
	}
	if req.CapabilityID != lc.Attempt.CapabilityID || !slices.Contains(lc.AdmittedCapabilities, req.CapabilityID) ||
		lc.Attempt.ManifestDigest != lc.Provider.ManifestDigest {
		return none, errors.New("capability or manifest digest outside the attempt's scope")
	}
	var v manifest.Validator
	if err := v.ValidateBinding(lc.Provider); err != nil {
		return none, err
	}
	entry, err := manifest.Describe(lc.Provider.Manifests, req.CapabilityID)
	if err != nil {
		return none, err
	}
	p, err := v.PrepareRequest(entry, req.Arguments)
	if err != nil {
		return none, err
	}
	d, err := ipc.RequestDigest(req.CapabilityID, p.Arguments)
	if err != nil {
		return none, err
	}
	if d != lc.Attempt.RequestDigest {
		return none, fmt.Errorf("normalized request digest %s, attempt has %s", d, lc.Attempt.RequestDigest)
	}
	resp := map[string]any{"text": p.Arguments["text"]}
	if err := v.ValidateResponse(entry, resp); err != nil {
		return none, err
	}
	data, err := canon.Marshal(resp)
	if err != nil {
		return none, err
	}
	return pluginshared.InvokeReply{Data: data, DataDigest: string(canon.Sum(data))}, nil
}

func main() {
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: pluginshared.HostHandshake,
		Plugins:         map[string]plugin.Plugin{"host": &pluginshared.HostPlugin{Impl: host{}}},
	})
}
