package launch_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/internal/testkit/testvectors"
	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/launch/discovery"
	"github.com/zeoruntime/runtimeipc/manifest"
)

func realHostBinding(t *testing.T) (manifest.ProviderBinding, realHost) {
	t.Helper()
	rh := testvectors.RealHost[realHost](t, "s08c_list_limit1_offset0")
	b, err := manifest.DecodeBinding([]byte(rh.FD3))
	if err != nil {
		t.Fatal(err)
	}
	return b, rh
}

func TestDiscovery(t *testing.T) {
	b, rh := realHostBinding(t)
	l, _ := newLauncher(t)
	ctx := testCtx(t)
	for _, doctor := range []bool{false, true} {
		describe := discovery.Describe
		if doctor {
			describe = discovery.Doctor
		}
		d, err := describe(ctx, l, b)
		if err != nil {
			t.Fatal(err)
		}
		want := discovery.Description{Distribution: "zeocore", Version: "0.11.0", ManifestDigest: b.ManifestDigest,
			ProtocolVersion: 1, Readiness: "static_inventory_valid", State: "succeeded"}
		if diff := cmp.Diff(want, d); diff != "" {
			t.Fatal(diff)
		}
	}
	// The page the real host printed, byte for byte.
	page, err := discovery.ListCapabilities(ctx, l, b, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	got, err := canon.Marshal(map[string]any{"capabilities": page.Capabilities, "next_offset": page.NextOffset,
		"protocol_version": 1, "state": "succeeded"})
	if err != nil {
		t.Fatal(err)
	}
	if string(got)+"\n" != rh.Stdout {
		t.Fatalf("page differs from the real host's:\n%s\n%s", got, rh.Stdout)
	}
	last, err := discovery.ListCapabilities(ctx, l, b, 100, 1)
	if err != nil || len(last.Capabilities) != 1 || last.NextOffset != nil {
		t.Fatalf("last page %+v, %v", last, err)
	}
	past, err := discovery.ListCapabilities(ctx, l, b, 5, 7)
	if err != nil || len(past.Capabilities) != 0 || past.NextOffset != nil {
		t.Fatalf("page past the end %+v, %v", past, err)
	}
	m, err := discovery.DescribeCapability(ctx, l, b, "example.two_effects@1.0.0")
	if err != nil || m.ID.Name != "two_effects" {
		t.Fatalf("%+v, %v", m.ID, err)
	}
	if _, err := discovery.ListCapabilities(ctx, l, b, 101, 0); !errors.Is(err, manifest.ErrPagination) {
		t.Fatalf("limit 101: %v", err)
	}
}

func TestDiscoveryFailures(t *testing.T) {
	b, _ := realHostBinding(t)
	ctx := testCtx(t)
	l, _ := newLauncher(t)
	// An identity the inventory does not hold: the host's protocol_error.
	_, err := discovery.DescribeCapability(ctx, l, b, "example.missing@1.0.0")
	var de *discovery.Error
	if !errors.Is(err, discovery.ErrRefused) || !errors.As(err, &de) || de.Result == nil ||
		de.Result.State != launch.StateProtocolError || de.Process.ExitCode != 8 {
		t.Fatalf("err = %v", err)
	}
	// A binding whose digest is not its inventory's: refused by the host.
	bad := b
	bad.ManifestDigest = canon.Digest("sha256:" + strings.Repeat("a", 64))
	if _, err := discovery.Describe(ctx, l, bad); !errors.Is(err, discovery.ErrRefused) {
		t.Fatalf("bad digest: %v", err)
	}
	for sc, want := range map[string]error{"garbage": launch.ErrMalformedResult, "lie": discovery.ErrMismatch, "exit-1": launch.ErrNoResult} {
		l, _ := newLauncher(t, "ZEO_HOSTSIM_SCENARIO="+sc)
		if _, err := discovery.Describe(ctx, l, b); !errors.Is(err, want) {
			t.Errorf("%s: describe err = %v, want %v", sc, err, want)
		}
		if sc == "lie" {
			if _, err := discovery.ListCapabilities(ctx, l, b, 1, 0); !errors.Is(err, want) {
				t.Errorf("lie: list err = %v", err)
			}
		}
	}
}

// TestDiscoveryDescriptors: a discovery host inherits FDs 0–3 only and no
// environment but its own.
func TestDiscoveryDescriptors(t *testing.T) {
	b, _ := realHostBinding(t)
	t.Setenv("ZEO_PARENT_SECRET", "hunter2")
	l, _ := newLauncher(t, "ZEO_HOSTSIM_SCENARIO=report")
	_, err := discovery.Describe(testCtx(t), l, b)
	var de *discovery.Error
	if !errors.As(err, &de) {
		t.Fatalf("err = %v", err)
	}
	var r report
	if err := json.Unmarshal(de.Process.Stdout, &r); err != nil {
		t.Fatal(err)
	}
	var inherited []string
	for fd, target := range r.FDs {
		if !strings.HasPrefix(target, "cloexec ") {
			inherited = append(inherited, fd)
		}
	}
	if len(inherited) != 4 || r.FDs["3"] == "" || len(r.Env) != 1 {
		t.Fatalf("inherited %v, env %v", inherited, r.Env)
	}
}
