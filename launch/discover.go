package launch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/ipc"
	"github.com/zeoruntime/runtimeipc/manifest"
)

// These errors describe failed discovery commands; each *DiscoveryError
// wraps one of them or one of ParseResult's (ErrSignaled,
// ErrUnknownExitCode, ErrResultTooLarge, ErrNoResult, ErrNotOneLine,
// ErrMalformedResult).
var (
	// ErrDiscoveryRefused: the host answered with its failure envelope
	// (invalid_request, exit 2, or protocol_error, exit 8): the binding,
	// the inventory or the arguments were refused.
	ErrDiscoveryRefused = errors.New("launch: host refused the discovery command")
	// ErrDiscoveryMismatch: the host's output is well-formed but does not
	// say what the binding says (another distribution, version or digest,
	// another page).
	ErrDiscoveryMismatch = errors.New("launch: discovery output disagrees with the binding")
)

// DiscoveryError is a failed discovery command, with the process evidence.
// Its Error text may change; use errors.Is and errors.As.
type DiscoveryError struct {
	// Command is the host command line after Config.Args.
	Command []string
	// Err is the sentinel.
	Err error
	// Process is what the launcher observed; nil if nothing started.
	Process *Process
	// Result is the host's failure envelope when it wrote one.
	Result *HostResult
	// Cause is the underlying error, if any.
	Cause error
}

// Error describes the failure.
func (e *DiscoveryError) Error() string {
	msg := fmt.Sprintf("%v (%v", e.Err, e.Command)
	if e.Process != nil {
		msg += fmt.Sprintf(", exit status %d", e.Process.ExitCode)
	}
	if e.Result != nil && e.Result.ErrorCode != nil {
		msg += ", " + *e.Result.ErrorCode
	}
	msg += ")"
	if e.Cause != nil {
		msg += ": " + e.Cause.Error()
	}
	return msg
}

// Unwrap returns the sentinel and the cause.
func (e *DiscoveryError) Unwrap() []error {
	if e.Cause != nil {
		return []error{e.Err, e.Cause}
	}
	return []error{e.Err}
}

// Description is the output of `describe` and `doctor` (doc/protocol.md,
// “Static discovery”).
type Description struct {
	Authorized      bool         `json:"authorized"`
	Distribution    string       `json:"distribution"`
	ManifestDigest  canon.Digest `json:"manifest_digest"`
	ProtocolVersion int          `json:"protocol_version"`
	Readiness       string       `json:"readiness"`
	State           string       `json:"state"`
	Version         string       `json:"version"`
}

// Describe runs `describe --json --binding-fd 3` with b on FD 3 and checks
// the answer against b: static readiness, never authorization.
func (l *Launcher) Describe(ctx context.Context, b manifest.ProviderBinding) (Description, error) {
	return l.describe(ctx, b, "describe")
}

// Doctor runs `doctor --json --binding-fd 3`, which upstream answers exactly
// like describe.
func (l *Launcher) Doctor(ctx context.Context, b manifest.ProviderBinding) (Description, error) {
	return l.describe(ctx, b, "doctor")
}

func (l *Launcher) describe(ctx context.Context, b manifest.ProviderBinding, cmd string) (Description, error) {
	args := []string{cmd, "--json", "--binding-fd", "3"}
	want := Description{Authorized: false, Distribution: b.Distribution, ManifestDigest: b.ManifestDigest,
		ProtocolVersion: ipc.ProtocolVersion, Readiness: "static_inventory_valid", State: "succeeded", Version: b.Version}
	var got Description
	if err := l.discover(ctx, b, args, want, &got); err != nil {
		return Description{}, err
	}
	return got, nil
}

// ListCapabilities runs `capabilities list --limit N --offset M` and checks
// that the page is exactly inventory[offset:offset+limit] of b's projection
// with the right next offset. limit must be 1..100 and offset ≥ 0
// (manifest.ErrPagination, checked before anything starts).
func (l *Launcher) ListCapabilities(ctx context.Context, b manifest.ProviderBinding, limit, offset int) (manifest.Page, error) {
	page, err := manifest.Paginate(b.Manifests, limit, offset)
	if err != nil {
		return manifest.Page{}, err
	}
	args := []string{"capabilities", "list", "--limit", strconv.Itoa(limit), "--offset", strconv.Itoa(offset), "--json", "--binding-fd", "3"}
	want := map[string]any{"capabilities": page.Capabilities, "next_offset": page.NextOffset,
		"protocol_version": ipc.ProtocolVersion, "state": "succeeded"}
	var got struct {
		Capabilities    []manifest.CapabilityManifest `json:"capabilities"`
		NextOffset      *int                          `json:"next_offset"`
		ProtocolVersion int                           `json:"protocol_version"`
		State           string                        `json:"state"`
	}
	if err := l.discover(ctx, b, args, want, &got); err != nil {
		return manifest.Page{}, err
	}
	return manifest.Page{Capabilities: got.Capabilities, NextOffset: got.NextOffset}, nil
}

// DescribeCapability runs `capabilities describe ID` and checks that the
// answer is b's projected manifest for id. An id b does not hold is refused
// by the host (ErrDiscoveryRefused).
func (l *Launcher) DescribeCapability(ctx context.Context, b manifest.ProviderBinding, id string) (manifest.CapabilityManifest, error) {
	args := []string{"capabilities", "describe", id, "--json", "--binding-fd", "3"}
	var want any
	if m, err := manifest.Describe(b.Manifests, id); err == nil {
		want = map[string]any{"capability": m, "protocol_version": ipc.ProtocolVersion, "state": "succeeded"}
	}
	var got struct {
		Capability      manifest.CapabilityManifest `json:"capability"`
		ProtocolVersion int                         `json:"protocol_version"`
		State           string                      `json:"state"`
	}
	if err := l.discover(ctx, b, args, want, &got); err != nil {
		return manifest.CapabilityManifest{}, err
	}
	return got.Capability, nil
}

// discover runs one discovery command with b on FD 3 (nothing on FD 4,
// empty stdin) and checks its one line: exit 0 and canonical JSON equal to
// want (nil: the host must refuse), decoded into got.
func (l *Launcher) discover(ctx context.Context, b manifest.ProviderBinding, args []string, want, got any) error {
	fail := func(sentinel error, p *Process, r *HostResult, cause error) error {
		return &DiscoveryError{Command: args, Err: sentinel, Process: p, Result: r, Cause: cause}
	}
	bb, err := canon.Marshal(b)
	if err != nil {
		return fmt.Errorf("%w: encoding the provider binding: %w", ErrInvalidContext, err)
	}
	if err := l.cfg.Verifier.VerifyEnvironment(ctx, b); err != nil {
		return err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultDiscoveryTimeout)
		defer cancel()
	}
	r, err := l.run(ctx, spec{args: args, fd3: bb})
	if err != nil {
		return err
	}
	p := r.p
	switch {
	case p.Signal != nil || p.ExitCode < 0:
		return fail(ErrSignaled, p, nil, nil)
	case p.StdoutBytes > MaxResultBytes:
		return fail(ErrResultTooLarge, p, nil, nil)
	case p.StdoutBytes == 0:
		return fail(ErrNoResult, p, nil, nil)
	}
	line := bytes.TrimSuffix(p.Stdout, []byte("\n"))
	if bytes.ContainsAny(line, "\r\n") {
		return fail(ErrNotOneLine, p, nil, nil)
	}
	v, err := canon.Options{MaxBytes: MaxResultBytes}.Parse(line)
	if err != nil {
		return fail(ErrMalformedResult, p, nil, err)
	}
	if p.ExitCode != 0 {
		// The failure envelope: a HostResult with a null binding.
		var r HostResult
		if err := v.Decode(&r); err != nil {
			return fail(ErrMalformedResult, p, nil, err)
		}
		if err := r.Validate(); err != nil {
			return fail(ErrMalformedResult, p, &r, err)
		}
		if c, _ := r.State.ExitCode(); c != p.ExitCode || r.Binding != nil {
			return fail(ErrUnknownExitCode, p, &r, errors.New("failure envelope disagrees with the exit status"))
		}
		return fail(ErrDiscoveryRefused, p, &r, nil)
	}
	if want == nil {
		return fail(ErrDiscoveryMismatch, p, nil, errors.New("the host answered for an identity the binding does not hold"))
	}
	wb, err := canon.Marshal(want)
	if err != nil {
		return fail(ErrDiscoveryMismatch, p, nil, err)
	}
	gb, err := v.Canonical()
	if err != nil || !bytes.Equal(gb, wb) {
		return fail(ErrDiscoveryMismatch, p, nil, err)
	}
	if err := v.Decode(got); err != nil {
		return fail(ErrDiscoveryMismatch, p, nil, err)
	}
	return nil
}
