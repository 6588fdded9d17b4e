package launch

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/internal/protocol"
	"github.com/zeoruntime/runtimeipc/ipc"
	"github.com/zeoruntime/runtimeipc/manifest"
)

// LaunchContext is the document the host reads from its context descriptor
// (doc/protocol.md, “Launch context”). JSON names are upstream's. Marshal it
// with canon.Marshal after Materialize so that what is sent is what is hashed
// (doc/design.md, “Launch digest”).
//
// A LaunchContext is a plain value; it is not safe to modify while a launch
// that uses it is running.
type LaunchContext struct {
	// ProtocolVersion must be 1; zero is materialized to 1.
	ProtocolVersion int `json:"protocol_version"`
	// Provider is the exact provider and its entire inventory.
	Provider manifest.ProviderBinding `json:"provider"`
	// Attempt is the attempt this launch serves.
	Attempt ipc.AttemptBinding `json:"attempt"`
	// BootstrapID is the single-use id the host presents in bootstrap.
	BootstrapID string `json:"bootstrap_id"`
	// AdmittedCapabilities must contain the request's capability id.
	AdmittedCapabilities []string `json:"admitted_capabilities"`
	// DeadlineUnixMS is the wall-clock attempt deadline in milliseconds
	// since the epoch; the launcher also enforces it on the process.
	DeadlineUnixMS int64 `json:"deadline_unix_ms"`
	// Services, Credentials, Binaries and NetworkHosts are the names the
	// requirement subset check may use; nil means none.
	Services     []string `json:"services" canon:"optional"`
	Credentials  []string `json:"credentials" canon:"optional"`
	Binaries     []string `json:"binaries" canon:"optional"`
	NetworkHosts []string `json:"network_hosts" canon:"optional"`
	// NetworkAllowed is needed by capabilities that require the network.
	NetworkAllowed bool `json:"network_allowed" canon:"optional"`
	// FilesystemRead and FilesystemWrite are accepted and ignored by the
	// host (doc/protocol.md, “Launch context”).
	FilesystemRead  bool `json:"filesystem_read" canon:"optional"`
	FilesystemWrite bool `json:"filesystem_write" canon:"optional"`
	// Workspace is handed to the provider as its work directory; the host
	// never creates it.
	Workspace string `json:"workspace"`
	// MaxMessageBytes bounds frames both ways; zero means
	// ipc.MaxMessageBytes.
	MaxMessageBytes int `json:"max_message_bytes" canon:"optional"`
	// RPCTimeoutMS bounds each exchange; zero means 5000.
	RPCTimeoutMS int `json:"rpc_timeout_ms" canon:"optional"`
	// TotalDispatchBudget is the number of distinct logical effects the host
	// forwards; zero (the default) disables effects.
	TotalDispatchBudget int64 `json:"total_dispatch_budget" canon:"optional"`
}

// Materialize returns c with every default filled in, as the host's model
// would hold it: protocol version 1, empty arrays instead of nil, and the
// frame limit and RPC timeout defaults. c is not modified.
func (c LaunchContext) Materialize() LaunchContext {
	if c.ProtocolVersion == 0 {
		c.ProtocolVersion = ipc.ProtocolVersion
	}
	for _, p := range []*[]string{&c.AdmittedCapabilities, &c.Services, &c.Credentials, &c.Binaries, &c.NetworkHosts} {
		if *p == nil {
			*p = []string{}
		}
	}
	if c.MaxMessageBytes == 0 {
		c.MaxMessageBytes = ipc.MaxMessageBytes
	}
	if c.RPCTimeoutMS == 0 {
		c.RPCTimeoutMS = int(ipc.DefaultRPCTimeout / time.Millisecond)
	}
	return c
}

// Deadline returns DeadlineUnixMS as a time.
func (c LaunchContext) Deadline() time.Time { return time.UnixMilli(c.DeadlineUnixMS) }

// Validate checks the rules of the host's LaunchContext model
// (doc/protocol.md, “Launch context”) on the materialized context: every
// field's type and range, identifier lengths, the attempt and provider
// bindings' shapes, and that the provider's manifest_digest is the digest of
// its inventory. It does not check what the host checks later against the
// request (scope, admitted capabilities, deadline not yet passed, attempt
// manifest digest equal to the provider's): those are the host's refusals to
// report. Errors wrap ErrInvalidContext.
func (c LaunchContext) Validate() error {
	_, err := c.Materialize().validate(nil)
	return err
}

// validate is Validate on a materialized context; it also returns the
// canonical inventory JSON it computed to check the manifest digest (nil
// when the provider's fields were already wrong), so that Encode does not
// project and encode the inventory a second time for the launch digest.
// A non-nil inv is that JSON for a provider a ContextEncoder has already
// validated: the provider's checks are skipped and inv is returned.
func (c LaunchContext) validate(inv []byte) ([]byte, error) {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if c.ProtocolVersion != ipc.ProtocolVersion {
		add("protocol_version is %d, want 1", c.ProtocolVersion)
	}
	if err := c.Attempt.Validate(); err != nil {
		add("attempt: %w", err)
	}
	if inv == nil {
		var err error
		if inv, err = validateProvider(c.Provider); err != nil {
			add("provider: %w", err)
		}
	}
	if err := protocol.CheckIdentifier("bootstrap_id", c.BootstrapID); err != nil {
		errs = append(errs, err)
	}
	if err := protocol.CheckIdentifier("workspace", c.Workspace); err != nil {
		errs = append(errs, err)
	}
	for _, list := range []struct {
		name string
		v    []string
	}{{"admitted_capabilities", c.AdmittedCapabilities}, {"services", c.Services}, {"credentials", c.Credentials},
		{"binaries", c.Binaries}, {"network_hosts", c.NetworkHosts}} {
		for i, s := range list.v {
			if err := protocol.CheckIdentifier(fmt.Sprintf("%s[%d]", list.name, i), s); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if c.DeadlineUnixMS <= 0 {
		add("deadline_unix_ms is %d, want > 0", c.DeadlineUnixMS)
	}
	if c.DeadlineUnixMS > canon.MaxSafeInteger {
		add("deadline_unix_ms %d is not a safe integer", c.DeadlineUnixMS)
	}
	if c.MaxMessageBytes < ipc.MinMessageBytes || c.MaxMessageBytes > ipc.MaxMessageBytes {
		add("max_message_bytes is %d, want %d..%d", c.MaxMessageBytes, ipc.MinMessageBytes, ipc.MaxMessageBytes)
	}
	if c.RPCTimeoutMS < 1 || c.RPCTimeoutMS > int(ipc.MaxRPCTimeout/time.Millisecond) {
		add("rpc_timeout_ms is %d, want 1..30000", c.RPCTimeoutMS)
	}
	if c.TotalDispatchBudget < 0 {
		add("total_dispatch_budget is %d, want ≥ 0", c.TotalDispatchBudget)
	}
	if c.TotalDispatchBudget > canon.MaxSafeInteger {
		add("total_dispatch_budget %d is not a safe integer", c.TotalDispatchBudget)
	}
	if len(errs) == 0 {
		return inv, nil
	}
	return nil, fmt.Errorf("%w: %w", ErrInvalidContext, errors.Join(errs...))
}

// validateProvider checks the ProviderBinding fields the host's strict model
// checks, and that its manifest digest is the digest of its inventory. It
// returns the inventory's canonical JSON when it got that far.
func validateProvider(p manifest.ProviderBinding) ([]byte, error) {
	var errs []error
	if p.ProtocolVersion != ipc.ProtocolVersion {
		errs = append(errs, fmt.Errorf("protocol_version is %d, want 1", p.ProtocolVersion))
	}
	for _, f := range []struct{ name, v string }{
		{"distribution", p.Distribution}, {"version", p.Version}, {"python_version", p.PythonVersion},
	} {
		if err := protocol.CheckIdentifier(f.name, f.v); err != nil {
			errs = append(errs, err)
		}
	}
	if p.Factory == "" {
		errs = append(errs, errors.New("factory is empty"))
	}
	if err := p.EnvironmentDigest.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("environment_digest: %w", err))
	}
	if err := p.ManifestDigest.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("manifest_digest: %w", err))
	}
	if p.Generation < 1 {
		errs = append(errs, fmt.Errorf("generation is %d, want ≥ 1", p.Generation))
	}
	var inv []byte
	if len(errs) == 0 {
		// InventoryDigest is the digest of exactly these bytes.
		b, err := manifest.InventoryJSON(p.Manifests)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("inventory: %w", err))
		case canon.Sum(b) != p.ManifestDigest:
			errs = append(errs, fmt.Errorf("manifest_digest %s is not the inventory's digest %s", p.ManifestDigest, canon.Sum(b)))
		default:
			inv = b
		}
	}
	return inv, errors.Join(errs...)
}

// Encoded is a LaunchContext ready to send: the exact bytes written to the
// context descriptor and the launch digest the host must present in
// bootstrap. It is immutable once returned.
type Encoded struct {
	// Context is the materialized context the bytes encode.
	Context LaunchContext
	// Bytes are the canonical JSON bytes sent on the context descriptor.
	Bytes []byte
	// LaunchDigest is digest of the sent context with provider.manifests
	// replaced by the manifest projection (doc/protocol.md,
	// “What is hashed”).
	LaunchDigest canon.Digest
}

// Encode materializes and validates c, and returns its canonical bytes and
// launch digest. Errors wrap ErrInvalidContext. A launcher of many attempts
// of one provider encodes them with a ContextEncoder instead, which does
// the provider's part once.
func (c LaunchContext) Encode() (Encoded, error) { return c.encode(nil) }

// encode is Encode, with the provider's validation and inventory bytes
// taken from p when it is not nil.
func (c LaunchContext) encode(p *ContextEncoder) (Encoded, error) {
	c = c.Materialize()
	var inv, manifests []byte
	if p != nil {
		inv, manifests = p.inventory, p.manifests
	}
	inv, err := c.validate(inv)
	if err != nil {
		return Encoded{}, err
	}
	b, d, err := encodeSpliced(c, inv, manifests)
	if err != nil {
		return Encoded{}, err
	}
	if len(b) > MaxContextBytes {
		return Encoded{}, fmt.Errorf("%w: %d bytes, the host reads at most %d", ErrInvalidContext, len(b), MaxContextBytes)
	}
	return Encoded{Context: c, Bytes: b, LaunchDigest: d}, nil
}

// ContextEncoder encodes the launch contexts of one provider binding. The
// binding's inventory — its manifests with their schemas — is most of a
// context's bytes and most of the work of encoding one: Encode validates the
// binding, projects the inventory for the launch digest and encodes the
// manifests every time. A ContextEncoder does that once, when it is made,
// and its Encode returns exactly what LaunchContext.Encode returns: the
// same bytes, launch digest and errors.
//
// A ContextEncoder is immutable and safe for concurrent use. It keeps the
// binding it was made from, whose manifests must not be modified while it
// is in use.
type ContextEncoder struct {
	provider  manifest.ProviderBinding
	manifests []byte // canonical bytes of provider.Manifests, as sent
	inventory []byte // their canonical projection, as hashed
}

// NewContextEncoder validates p as LaunchContext.Validate validates a
// context's provider, and encodes its inventory. Errors wrap
// ErrInvalidContext.
func NewContextEncoder(p manifest.ProviderBinding) (*ContextEncoder, error) {
	inv, err := validateProvider(p)
	if err != nil {
		return nil, fmt.Errorf("%w: provider: %w", ErrInvalidContext, err)
	}
	mb, err := canon.Marshal(p.Manifests)
	if err != nil {
		return nil, fmt.Errorf("%w: provider: encoding the manifests: %w", ErrInvalidContext, err)
	}
	return &ContextEncoder{provider: p, manifests: mb, inventory: inv}, nil
}

// Encode materializes, validates and encodes c, as c.Encode does. c.Provider
// must be the encoder's binding (a copy of the value it was made from);
// any other provider is refused with ErrInvalidContext.
func (e *ContextEncoder) Encode(c LaunchContext) (Encoded, error) {
	if !e.isProvider(c.Provider) {
		return Encoded{}, fmt.Errorf("%w: provider: not the binding this ContextEncoder was made for (distribution %q, version %q, manifest digest %s)",
			ErrInvalidContext, e.provider.Distribution, e.provider.Version, e.provider.ManifestDigest)
	}
	return c.encode(e)
}

// isProvider reports whether p is the encoder's binding: the same scalar
// fields, and the same manifests — at once when they are the same slice
// (a copy of the binding shares it), else when they encode to the same
// bytes.
func (e *ContextEncoder) isProvider(p manifest.ProviderBinding) bool {
	q := e.provider
	if p.ProtocolVersion != q.ProtocolVersion || p.Distribution != q.Distribution || p.Version != q.Version ||
		p.PythonVersion != q.PythonVersion || p.EnvironmentDigest != q.EnvironmentDigest || p.Factory != q.Factory ||
		p.ManifestDigest != q.ManifestDigest || p.Generation != q.Generation || len(p.Manifests) != len(q.Manifests) {
		return false
	}
	if len(p.Manifests) == 0 || &p.Manifests[0] == &q.Manifests[0] {
		return true
	}
	b, err := canon.Marshal(p.Manifests)
	return err == nil && bytes.Equal(b, e.manifests)
}

// LaunchDigest returns the launch digest of c (doc/protocol.md,
// “What is hashed”): the digest of the materialized context with
// provider.manifests replaced by the projection of the inventory. Errors wrap
// ErrInvalidContext.
func (c LaunchContext) LaunchDigest() (canon.Digest, error) {
	e, err := c.Encode()
	return e.LaunchDigest, err
}

// manifestsMember is the provider's manifests member, empty, as canon
// writes it. In canonical JSON every '"' inside a string is escaped, so
// these bytes can only be that key followed by its value.
var manifestsMember = []byte(`"manifests":[]`)

// encodeSpliced returns the canonical bytes of c and its launch digest from
// one encoding of c without its manifests plus one of the manifests: RFC
// 8785 output is compositional (each member is its key and its value's
// canonical bytes, in an order that depends on keys only), so splicing the
// manifests' bytes, or the projection's inv, in place of the empty array
// gives exactly the canonical bytes of the whole document, or of the
// document the launch digest is defined on. The context's own schemas are
// thus encoded once and never parsed back. Should the empty member not be
// found exactly once, it falls back to encoding and re-parsing the whole.
//
// mb, when not nil, is the manifests' canonical bytes, already encoded.
func encodeSpliced(c LaunchContext, inv, mb []byte) ([]byte, canon.Digest, error) {
	small := c
	small.Provider.Manifests = nil // written as []
	sb, err := canon.Marshal(small)
	if err != nil {
		return nil, "", fmt.Errorf("%w: encoding: %w", ErrInvalidContext, err)
	}
	if mb == nil {
		if mb, err = canon.Marshal(c.Provider.Manifests); err != nil {
			return nil, "", fmt.Errorf("%w: encoding: %w", ErrInvalidContext, err)
		}
	}
	at := bytes.Index(sb, manifestsMember)
	if at < 0 || bytes.Count(sb, manifestsMember) != 1 {
		b, err := canon.Marshal(c)
		if err != nil {
			return nil, "", fmt.Errorf("%w: encoding: %w", ErrInvalidContext, err)
		}
		d, err := launchDigest(c, inv)
		return b, d, err
	}
	at += len(manifestsMember) - len("[]")
	head, tail := sb[:at], sb[at+len("[]"):]
	sent := make([]byte, 0, len(head)+len(mb)+len(tail))
	sent = append(append(append(sent, head...), mb...), tail...)
	hashed := make([]byte, 0, len(head)+len(inv)+len(tail))
	hashed = append(append(append(hashed, head...), inv...), tail...)
	return sent, canon.Sum(hashed), nil
}

// launchDigest is the digest of c's canonical encoding with
// provider.manifests replaced by inv, the canonical inventory projection.
// The context is encoded again without its manifests, which are most of its
// bytes (their schemas), so that only that small document and the
// projection are parsed and re-emitted: the result is byte for byte the
// sent bytes with the manifests member swapped.
func launchDigest(c LaunchContext, inv []byte) (canon.Digest, error) {
	c.Provider.Manifests = nil // encoded as []; replaced below
	small, err := canon.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("%w: encoding: %w", ErrInvalidContext, err)
	}
	v, err := canon.Parse(small)
	if err != nil {
		return "", fmt.Errorf("%w: re-reading the encoded context: %w", ErrInvalidContext, err)
	}
	proj, err := canon.Parse(inv)
	if err != nil {
		return "", fmt.Errorf("%w: manifest projection: %w", ErrInvalidContext, err)
	}
	p, ok := v.Get("provider")
	if !ok {
		return "", fmt.Errorf("%w: encoded context has no provider", ErrInvalidContext)
	}
	m, ok := p.Get("manifests")
	if !ok {
		return "", fmt.Errorf("%w: encoded provider has no manifests", ErrInvalidContext)
	}
	*m = proj
	out, err := v.Canonical()
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrInvalidContext, err)
	}
	return canon.Sum(out), nil
}

// DecodeContext decodes a context document strictly, as the host does
// (unknown or missing keys, wrong types and explicit out-of-range values
// are refused), materializes its defaults and validates it. It is meant for
// tools and tests that read contexts back; errors wrap ErrInvalidContext.
func DecodeContext(b []byte) (LaunchContext, error) {
	v, err := canon.Options{MaxBytes: MaxContextBytes}.Parse(b)
	if err != nil {
		return LaunchContext{}, fmt.Errorf("%w: %w", ErrInvalidContext, err)
	}
	var c LaunchContext
	if err := v.Decode(&c); err != nil {
		return LaunchContext{}, fmt.Errorf("%w: %w", ErrInvalidContext, err)
	}
	// Zero means "default" in the Go value, but an explicit 0 on the wire is
	// out of range for these two.
	for _, k := range []string{"max_message_bytes", "rpc_timeout_ms", "protocol_version"} {
		if f, ok := v.Get(k); ok && f.Kind == canon.Integer && f.Int == 0 {
			return LaunchContext{}, fmt.Errorf("%w: %s is 0", ErrInvalidContext, k)
		}
	}
	c = c.Materialize()
	if err := c.Validate(); err != nil {
		return LaunchContext{}, err
	}
	return c, nil
}
