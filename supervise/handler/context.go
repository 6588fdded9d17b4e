package handler

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/zeoruntime/runtimeipc/ipc"
	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/manifest"
	"github.com/zeoruntime/runtimeipc/supervise/port"
)

// ContextSpec is everything a LaunchContext is built from. BuildContext
// is the one place where values cross from the ledger, the manifest and
// the attempt into the document the host reads.
type ContextSpec struct {
	// Provider is the exact provider binding.
	Provider manifest.ProviderBinding
	// Manifest is the invoked capability's manifest (from Provider).
	Manifest manifest.CapabilityManifest
	// Binding is the attempt.
	Binding ipc.AttemptBinding
	// Operation is the operation as the ledger holds it: its deadline
	// becomes the attempt deadline, and its budget the host's.
	Operation ledger.OperationView
	// BootstrapID is the id issued for the attempt.
	BootstrapID string
	// Workspace is handed to the provider as its work directory.
	Workspace string
	// Grants are what the Runtime lets the capability use.
	Grants port.Grants
	// RPCTimeout and MaxMessageBytes are the exchange bounds; zero means the
	// protocol defaults.
	RPCTimeout      time.Duration
	MaxMessageBytes int
}

// BuildContext returns the LaunchContext of one attempt:
//
//   - provider, attempt, bootstrap_id, workspace as given; the one
//     admitted capability is the binding's;
//   - deadline_unix_ms is the operation's deadline (the ledger refuses
//     admission and new effects after it);
//   - services, credentials, binaries and network_hosts are what the
//     manifest requires, and network_allowed its network requirement; a
//     requirement the Runtime cannot meet is a *RequirementsError naming
//     it (the host would answer unavailable with no hint);
//   - total_dispatch_budget is the budget left in the ledger plus the
//     effects already recorded: the host counts every distinct logical
//     effect id it sends, redeliveries of recorded effects included, while
//     the ledger debits only new ones and remains the bound.
func BuildContext(s ContextSpec) (launch.LaunchContext, error) {
	if err := CheckRequirements(s.Manifest, s.Grants); err != nil {
		return launch.LaunchContext{}, err
	}
	op := s.Operation.Operation
	if op.Deadline.IsZero() {
		return launch.LaunchContext{}, fmt.Errorf("%w: operation %q has no deadline; an attempt needs one", ErrInvalidConfig, op.OperationID)
	}
	left := max(op.EffectBudget-op.EffectsUsed, 0)
	budget := left + int64(len(s.Operation.Effects))
	r := s.Manifest.Requirements
	services := []string{}
	if slices.Contains(r.Services, port.EffectsService) {
		services = append(services, port.EffectsService)
	}
	c := launch.LaunchContext{
		Provider:             s.Provider,
		Attempt:              s.Binding,
		BootstrapID:          s.BootstrapID,
		AdmittedCapabilities: []string{s.Binding.CapabilityID},
		DeadlineUnixMS:       op.Deadline.UnixMilli(),
		Services:             services,
		Credentials:          slices.Clone(r.Credentials),
		Binaries:             slices.Clone(r.Binaries),
		NetworkHosts:         slices.Clone(r.Network.Hosts),
		NetworkAllowed:       r.Network.Required,
		Workspace:            s.Workspace,
		MaxMessageBytes:      s.MaxMessageBytes,
		RPCTimeoutMS:         int(s.RPCTimeout / time.Millisecond),
		TotalDispatchBudget:  budget,
	}
	return c.Materialize(), nil
}

// CheckRequirements reports, as a *RequirementsError, every requirement
// of m that the host could not meet with g: a service other than
// runtime.effects, a filesystem need (the host never grants one), and
// credentials, binaries, network hosts or network access that g does not
// grant.
func CheckRequirements(m manifest.CapabilityManifest, g port.Grants) error {
	var missing []string
	r := m.Requirements
	for _, s := range r.Services {
		if s != port.EffectsService {
			missing = append(missing, fmt.Sprintf("service %q (the host can only inject %q)", s, port.EffectsService))
		}
	}
	if r.Filesystem.Read || r.Filesystem.Write {
		missing = append(missing, "filesystem access (the host refuses every capability that declares it)")
	}
	for _, list := range []struct {
		what       string
		need, have []string
	}{{"credential", r.Credentials, g.Credentials}, {"binary", r.Binaries, g.Binaries}, {"network host", r.Network.Hosts, g.NetworkHosts}} {
		for _, n := range list.need {
			if !slices.Contains(list.have, n) {
				missing = append(missing, fmt.Sprintf("%s %q (not in Grants)", list.what, n))
			}
		}
	}
	if r.Network.Required && !g.NetworkAllowed {
		missing = append(missing, "network access (Grants.NetworkAllowed is false)")
	}
	if len(missing) == 0 {
		return nil
	}
	return &RequirementsError{Capability: m.ID.String(), Missing: missing}
}

// RequirementsError lists the requirements of a capability that the host
// could not meet with the Grants: the host would answer unavailable
// without saying why, so the attempt is refused before launch instead (a
// Supervisor reports it as a *supervise.PreflightError, check
// "requirements").
type RequirementsError struct {
	// Capability is the capability's canonical id.
	Capability string
	// Missing says, one entry per requirement, what is missing and why.
	Missing []string
}

// Error lists the missing requirements.
func (e *RequirementsError) Error() string {
	return "supervise: " + e.Detail()
}

// Detail is the message without its package prefix: "capability X
// requires ...".
func (e *RequirementsError) Detail() string {
	return fmt.Sprintf("capability %s requires %s", e.Capability, strings.Join(e.Missing, ", "))
}

// BindingOf rebuilds the wire AttemptBinding of an attempt from the
// ledger alone, as after a restart: the operation gives the scope, the
// capability and the digests, the evidence the attempt and the binding
// fields the ledger holds nowhere else. launch.ParseResult of the
// evidence's HostResult and ExitCode against it judges the host's result
// again.
func BindingOf(op ledger.Operation, ev ledger.AttemptEvidence) ipc.AttemptBinding {
	return ipc.AttemptBinding{
		OrganizationID: op.Scope.OrganizationID, ProjectID: op.Scope.ProjectID,
		SeatID: ev.SeatID, RuntimeBindingID: ev.RuntimeBindingID, PacketID: ev.PacketID,
		OperationID: op.OperationID, AttemptID: ev.AttemptID, FencingGeneration: ev.Generation,
		CapabilityID: op.CapabilityID, RequestDigest: op.RequestDigest, ManifestDigest: op.ManifestDigest,
	}
}
