//go:build linux

package hostproc

import (
	"errors"
	"fmt"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/ipc"
	"github.com/zeoruntime/runtimeipc/manifest"
)

// launchContext is the host's LaunchContext model (doc/protocol.md,
// “Launch context”), parsed strictly with its defaults materialized. It is
// declared here rather than taken from launch.LaunchContext on purpose: the
// simulated host reads what the launcher wrote the way upstream's host
// does, so a field the launcher misnames or omits fails here too.
type launchContext struct {
	ProtocolVersion      int                      `json:"protocol_version"`
	Provider             manifest.ProviderBinding `json:"provider"`
	Attempt              ipc.AttemptBinding       `json:"attempt"`
	BootstrapID          string                   `json:"bootstrap_id"`
	AdmittedCapabilities []string                 `json:"admitted_capabilities"`
	DeadlineUnixMS       int64                    `json:"deadline_unix_ms"`
	Services             []string                 `json:"services" canon:"optional"`
	Credentials          []string                 `json:"credentials" canon:"optional"`
	Binaries             []string                 `json:"binaries" canon:"optional"`
	NetworkHosts         []string                 `json:"network_hosts" canon:"optional"`
	NetworkAllowed       bool                     `json:"network_allowed" canon:"optional"`
	FilesystemRead       bool                     `json:"filesystem_read" canon:"optional"`
	FilesystemWrite      bool                     `json:"filesystem_write" canon:"optional"`
	Workspace            string                   `json:"workspace"`
	MaxMessageBytes      *int                     `json:"max_message_bytes" canon:"optional"`
	RPCTimeoutMS         *int                     `json:"rpc_timeout_ms" canon:"optional"`
	TotalDispatchBudget  int64                    `json:"total_dispatch_budget" canon:"optional"`

	launchDigest canon.Digest
}

func parseContext(raw []byte) (*launchContext, error) {
	var c launchContext
	if err := canon.Unmarshal(raw, &c); err != nil {
		return nil, err
	}
	if c.MaxMessageBytes == nil {
		n := 1 << 20
		c.MaxMessageBytes = &n
	}
	if c.RPCTimeoutMS == nil {
		n := 5000
		c.RPCTimeoutMS = &n
	}
	for _, p := range []*[]string{&c.Services, &c.Credentials, &c.Binaries, &c.NetworkHosts} {
		if *p == nil {
			*p = []string{}
		}
	}
	var errs []error
	if c.ProtocolVersion != 1 {
		errs = append(errs, errors.New("protocol_version"))
	}
	if err := c.Attempt.Validate(); err != nil {
		errs = append(errs, err)
	}
	if !validIdentifier(c.BootstrapID) || !validIdentifier(c.Workspace) {
		errs = append(errs, errors.New("bootstrap_id or workspace"))
	}
	for _, l := range [][]string{c.AdmittedCapabilities, c.Services, c.Credentials, c.Binaries, c.NetworkHosts} {
		for _, s := range l {
			if !validIdentifier(s) {
				errs = append(errs, fmt.Errorf("identifier %q", s))
			}
		}
	}
	if c.DeadlineUnixMS <= 0 || *c.MaxMessageBytes < 1024 || *c.MaxMessageBytes > 1<<20 ||
		*c.RPCTimeoutMS < 1 || *c.RPCTimeoutMS > 30000 || c.TotalDispatchBudget < 0 {
		errs = append(errs, errors.New("bounds"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	// The launch digest: the parsed context, every default present, with
	// provider.manifests replaced by their projection (doc/protocol.md,
	// “What is hashed”). The manifests (most of the bytes: their schemas) are
	// left out of the encoding that gets parsed back, since they are replaced
	// anyway.
	small := c
	small.Provider.Manifests = nil
	full, err := canon.Marshal(small)
	if err != nil {
		return nil, err
	}
	v, err := canon.Parse(full)
	if err != nil {
		return nil, err
	}
	inv, err := manifest.InventoryJSON(c.Provider.Manifests)
	if err != nil {
		return nil, err
	}
	proj, err := canon.Parse(inv)
	if err != nil {
		return nil, err
	}
	p, _ := v.Get("provider")
	m, ok := p.Get("manifests")
	if !ok {
		return nil, errors.New("provider without manifests")
	}
	*m = proj
	out, err := v.Canonical()
	if err != nil {
		return nil, err
	}
	c.launchDigest = canon.Sum(out)
	return &c, nil
}
