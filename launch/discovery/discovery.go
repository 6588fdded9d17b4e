package discovery

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/ipc"
	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/manifest"
)

// These errors describe failed discovery commands; each *Error wraps one
// of them or one of launch.ParseResult's (launch.ErrSignaled,
// launch.ErrUnknownExitCode, launch.ErrResultTooLarge, launch.ErrNoResult,
// launch.ErrNotOneLine, launch.ErrMalformedResult).
var (
	// ErrRefused: the host answered with its failure envelope
	// (invalid_request, exit 2, or protocol_error, exit 8): the binding,
	// the inventory or the arguments were refused.
	ErrRefused = errors.New("launch: host refused the discovery command")
	// ErrMismatch: the host's output is well-formed but does not say what
	// the binding says (another distribution, version or digest, another
	// page).
	ErrMismatch = errors.New("launch: discovery output disagrees with the binding")
)

// Error is a failed discovery command, with the process evidence. Its
// Error text may change; use errors.Is and errors.As.
type Error struct {
	// Command is the host command line after Config.Args.
	Command []string
	// Err is the sentinel.
	Err error
	// Process is what the launcher observed; nil if nothing started.
	Process *launch.Process
	// Result is the host's failure envelope when it wrote one.
	Result *launch.HostResult
	// Cause is the underlying error, if any.
	Cause error
}

// Error describes the failure.
func (e *Error) Error() string {
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
func (e *Error) Unwrap() []error {
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

// Describe runs `describe --json --binding-fd 3` through l with b on FD 3
// and checks the answer against b: static readiness, never authorization.
func Describe(ctx context.Context, l *launch.Launcher, b manifest.ProviderBinding) (Description, error) {
	return describe(ctx, l, b, "describe")
}

// Doctor runs `doctor --json --binding-fd 3` through l, which upstream
// answers exactly like describe.
func Doctor(ctx context.Context, l *launch.Launcher, b manifest.ProviderBinding) (Description, error) {
	return describe(ctx, l, b, "doctor")
}

func describe(ctx context.Context, l *launch.Launcher, b manifest.ProviderBinding, cmd string) (Description, error) {
	args := []string{cmd, "--json", "--binding-fd", "3"}
	want := Description{Authorized: false, Distribution: b.Distribution, ManifestDigest: b.ManifestDigest,
		ProtocolVersion: ipc.ProtocolVersion, Readiness: "static_inventory_valid", State: "succeeded", Version: b.Version}
	var got Description
	if err := discover(ctx, l, b, args, want, &got); err != nil {
		return Description{}, err
	}
	return got, nil
}

// ListCapabilities runs `capabilities list --limit N --offset M` through l
// and checks
// that the page is exactly inventory[offset:offset+limit] of b's projection
// with the right next offset. limit must be 1..100 and offset ≥ 0
// (manifest.ErrPagination, checked before anything starts).
func ListCapabilities(ctx context.Context, l *launch.Launcher, b manifest.ProviderBinding, limit, offset int) (manifest.Page, error) {
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
	if err := discover(ctx, l, b, args, want, &got); err != nil {
		return manifest.Page{}, err
	}
	return manifest.Page{Capabilities: got.Capabilities, NextOffset: got.NextOffset}, nil
}

// DescribeCapability runs `capabilities describe ID` through l and checks
// that the answer is b's projected manifest for id. An id b does not hold
// is refused by the host (ErrRefused).
func DescribeCapability(ctx context.Context, l *launch.Launcher, b manifest.ProviderBinding, id string) (manifest.CapabilityManifest, error) {
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
	if err := discover(ctx, l, b, args, want, &got); err != nil {
		return manifest.CapabilityManifest{}, err
	}
	return got.Capability, nil
}

// discover runs one discovery command through l with b on FD 3 (nothing
// on FD 4, empty stdin) and checks its one line: exit 0 and canonical JSON
// equal to want (nil: the host must refuse), decoded into got.
func discover(ctx context.Context, l *launch.Launcher, b manifest.ProviderBinding, args []string, want, got any) error {
	fail := func(sentinel error, p *launch.Process, r *launch.HostResult, cause error) error {
		return &Error{Command: args, Err: sentinel, Process: p, Result: r, Cause: cause}
	}
	p, err := l.Discover(ctx, b, args...)
	if err != nil {
		return err
	}
	switch {
	case p.Signal != nil || p.ExitCode < 0:
		return fail(launch.ErrSignaled, p, nil, nil)
	case p.StdoutBytes > launch.MaxResultBytes:
		return fail(launch.ErrResultTooLarge, p, nil, nil)
	case p.StdoutBytes == 0:
		return fail(launch.ErrNoResult, p, nil, nil)
	}
	line := bytes.TrimSuffix(p.Stdout, []byte("\n"))
	if bytes.ContainsAny(line, "\r\n") {
		return fail(launch.ErrNotOneLine, p, nil, nil)
	}
	v, err := canon.Options{MaxBytes: launch.MaxResultBytes}.Parse(line)
	if err != nil {
		return fail(launch.ErrMalformedResult, p, nil, err)
	}
	if p.ExitCode != 0 {
		// The failure envelope: a HostResult with a null binding.
		var r launch.HostResult
		if err := v.Decode(&r); err != nil {
			return fail(launch.ErrMalformedResult, p, nil, err)
		}
		if err := r.Validate(); err != nil {
			return fail(launch.ErrMalformedResult, p, &r, err)
		}
		if c, _ := r.State.ExitCode(); c != p.ExitCode || r.Binding != nil {
			return fail(launch.ErrUnknownExitCode, p, &r, errors.New("failure envelope disagrees with the exit status"))
		}
		return fail(ErrRefused, p, &r, nil)
	}
	if want == nil {
		return fail(ErrMismatch, p, nil, errors.New("the host answered for an identity the binding does not hold"))
	}
	wb, err := canon.Marshal(want)
	if err != nil {
		return fail(ErrMismatch, p, nil, err)
	}
	gb, err := v.Canonical()
	if err != nil || !bytes.Equal(gb, wb) {
		return fail(ErrMismatch, p, nil, err)
	}
	if err := v.Decode(got); err != nil {
		return fail(ErrMismatch, p, nil, err)
	}
	return nil
}
