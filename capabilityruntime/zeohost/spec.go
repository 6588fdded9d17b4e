package zeohost

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"time"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/capabilityruntime"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/manifest"
	"github.com/zeoruntime/runtimeipc/supervise/port"
)

// Keys of BackendSpec.Config. They say what one instance runs and for whom;
// everything that decides what a provider may do (the ledger, the
// Authority, the Dispatcher, the grants) is the embedder's Go Config, never
// the spec.
const (
	// ConfigBinding (required) is the provider binding to admit: an object
	// in the binding's wire form (manifest.ProviderBinding's JSON), or a
	// manifest.ProviderBinding value. It is decoded strictly, as the host
	// decodes it.
	ConfigBinding = "binding"
	// ConfigScope (required) is the organization and project every
	// operation of the instance belongs to: {"organization_id": …,
	// "project_id": …}. A request cannot choose another.
	ConfigScope = "scope"
	// ConfigEffectBudget (optional, integer ≥ 0, default 0) is the total
	// number of distinct effects a new operation may authorize, across its
	// attempts (supervise.Call.EffectBudget). A capability that uses the
	// effect port needs at least one.
	ConfigEffectBudget = "effect_budget"
	// ConfigSeatID and ConfigRuntimeBindingID (optional strings) complete
	// each attempt's binding; empty means the Supervisor's.
	ConfigSeatID           = "seat_id"
	ConfigRuntimeBindingID = "runtime_binding_id"
	// ConfigReservationWaitMS (optional, integer ≥ 0, default 0) is how
	// long, in milliseconds, an attempt may wait for a resource
	// reservation another attempt holds (supervise.Call.ReservationWait).
	ConfigReservationWaitMS = "reservation_wait_ms"
)

// instanceSpec is a BackendSpec checked by Start.
type instanceSpec struct {
	typ, version    string
	interpreter     string // absolute
	dir             string // the host's working directory
	maxWorkers      int
	binding         manifest.ProviderBinding
	scope           ledger.Scope
	budget          int64
	seat, runtime   string
	reservationWait time.Duration
}

// specConfig is BackendSpec.Config's shape; canon decodes it strictly
// (unknown keys and wrong kinds are refused).
type specConfig struct {
	Binding           json.RawMessage `json:"binding"`
	Scope             ledger.Scope    `json:"scope"`
	EffectBudget      int64           `json:"effect_budget,omitempty"`
	SeatID            string          `json:"seat_id,omitempty"`
	RuntimeBindingID  string          `json:"runtime_binding_id,omitempty"`
	ReservationWaitMS int64           `json:"reservation_wait_ms,omitempty"`
}

// parseSpec checks spec; tmplDir is the launch template's Dir.
func parseSpec(spec capabilityruntime.BackendSpec, tmplDir string) (instanceSpec, error) {
	bad := func(format string, a ...any) (instanceSpec, error) {
		return instanceSpec{}, fmt.Errorf("%w %s@%s: %s", ErrInvalidSpec, spec.Type, spec.Version, fmt.Sprintf(format, a...))
	}
	if n, err := capabilityruntime.NormalizeType(spec.Type); err != nil || n != spec.Type {
		return bad("Type must be a canonical capability runtime name")
	}
	if spec.Version == "" {
		return bad("Version is empty")
	}
	if spec.Protocol != "" && spec.Protocol != Protocol {
		return bad("Protocol is %q; this backend speaks only %q (empty means it)", spec.Protocol, Protocol)
	}
	if spec.MaxWorkers < 0 {
		return bad("MaxWorkers %d is negative", spec.MaxWorkers)
	}
	if !filepath.IsAbs(spec.RootDir) {
		return bad("RootDir %q is not absolute: give the provider environment's directory", spec.RootDir)
	}
	r := capabilityruntime.ResolvedCapabilityRuntime{RootDir: spec.RootDir, Runtime: capabilityruntime.RuntimeInfo{Entrypoint: spec.Entrypoint}}
	interp := r.EntrypointPath()
	if interp == "" {
		return bad("Entrypoint %q is empty or climbs out of RootDir: give the provider environment's interpreter", spec.Entrypoint)
	}
	// The values of Config may be Go values (a manifest.ProviderBinding,
	// an int); their JSON encoding is what is checked, strictly.
	raw, err := json.Marshal(spec.Config)
	if err != nil {
		return bad("Config cannot be encoded as JSON: %v", err)
	}
	var sc specConfig
	if bytes.Equal(raw, []byte("null")) {
		return bad("Config is empty: it needs %q and %q", ConfigBinding, ConfigScope)
	}
	if err := canon.Unmarshal(raw, &sc); err != nil {
		return bad("Config: %v (keys: %s, %s, %s, %s, %s, %s)", err, ConfigBinding, ConfigScope, ConfigEffectBudget, ConfigSeatID, ConfigRuntimeBindingID, ConfigReservationWaitMS)
	}
	var b manifest.ProviderBinding
	if err := canon.Unmarshal(sc.Binding, &b); err != nil {
		return bad("Config %q is not a provider binding: %v", ConfigBinding, err)
	}
	if err := sc.Scope.Validate(); err != nil {
		return bad("Config %q: %v", ConfigScope, err)
	}
	if sc.EffectBudget < 0 || sc.ReservationWaitMS < 0 {
		return bad("Config %q and %q must not be negative", ConfigEffectBudget, ConfigReservationWaitMS)
	}
	if err := port.CheckDocument("provider binding", b); err != nil {
		return bad("Config %q: %v", ConfigBinding, err)
	}
	dir := tmplDir
	if dir == "" {
		dir = spec.RootDir
	}
	return instanceSpec{
		typ: spec.Type, version: spec.Version, interpreter: interp, dir: dir, maxWorkers: spec.MaxWorkers,
		binding: b, scope: sc.Scope, budget: sc.EffectBudget, seat: sc.SeatID, runtime: sc.RuntimeBindingID,
		reservationWait: time.Duration(sc.ReservationWaitMS) * time.Millisecond,
	}, nil
}

// bindingKey is what makes two bindings different for the Supervisor (its
// inventory, environment and the identity the host checks).
type bindingKey struct {
	distribution, version, factory, python string
	generation                             int64
	manifests, environment                 canon.Digest
}

func keyOf(b manifest.ProviderBinding) bindingKey {
	return bindingKey{distribution: b.Distribution, version: b.Version, factory: b.Factory, python: b.PythonVersion,
		generation: b.Generation, manifests: b.ManifestDigest, environment: b.EnvironmentDigest}
}
