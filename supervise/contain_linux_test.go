package supervise_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/zeoruntime/runtimeipc/internal/testkit/egresstest"
	"github.com/zeoruntime/runtimeipc/internal/testkit/hostsim/hostproc"
	"github.com/zeoruntime/runtimeipc/internal/testkit/testbin"
	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/launch/contain"
	"github.com/zeoruntime/runtimeipc/launch/environment"
	"github.com/zeoruntime/runtimeipc/ledger/memory"
	"github.com/zeoruntime/runtimeipc/manifest"
	"github.com/zeoruntime/runtimeipc/supervise/port"
)

// TestContainedEgress runs the hostile table's network rows through the
// Supervisor: the simulated host's echo capability, required to use the
// network and to reach one local HTTP server, tries each row and answers
// the report as its text. Admitted (the manifest's requirement, the
// Supervisor's Grants), the host reaches that server through the egress
// proxy only; a second local server, 127.0.0.1:5432 and name resolution
// fail. A capability without the network gets no proxy and no route.
func TestContainedEgress(t *testing.T) {
	allowed, other, dns := egresstest.ServeHTTP(t, "allowed"), egresstest.ServeHTTP(t, "other"), egresstest.ServeDNS(t)
	rows := map[string]string{
		"proxyget:http://" + allowed + "/": "ok 200 allowed",
		"tunnel:" + allowed:                "ok 200 allowed",
		"connect:" + allowed:               "fail",
		"proxyget:http://" + other + "/":   "403",
		"tunnel:" + other:                  "403",
		"connect:" + other:                 "fail",
		"tunnel:127.0.0.1:5432":            "403",
		"connect:127.0.0.1:5432":           "fail",
		"resolve:example.com@" + dns:       "fail",
	}
	var actions []string
	for a := range rows {
		actions = append(actions, a)
	}
	run := func(t *testing.T, network bool, off contain.Layers) map[string]string {
		l, err := launch.New(launch.Config{Interpreter: hostsimPath, Dir: t.TempDir(), Verifier: environment.Trust{},
			Env: []string{hostproc.EnvScenario + "=hostile-echo", hostproc.EnvHostile + "=" + strings.Join(actions, ";")},
			// Every layer on, the network's included.
			Containment: contain.Config{InitPath: testbin.InitBeside(hostsimPath), Off: off}, AllowRootHost: true})
		if err != nil {
			t.Fatal(err)
		}
		cfg := config(t, memory.New(), l)
		if network {
			b := testBinding(t)
			for i := range b.Manifests {
				if b.Manifests[i].ID.Name == "echo" {
					b.Manifests[i].Requirements.Network = manifest.NetworkRequirement{Required: true, Hosts: []string{allowed}}
				}
			}
			d, err := manifest.InventoryDigest(b.Manifests)
			if err != nil {
				t.Fatal(err)
			}
			b.ManifestDigest = d
			cfg.Provider = b
			cfg.Grants = port.Grants{NetworkAllowed: true, NetworkHosts: []string{allowed}}
		}
		s := newSupervisor(t, cfg)
		o, err := s.Invoke(testCtx(t), call("op-egress", "example.echo@1.0.0", map[string]any{"text": "x"}, 0))
		if err != nil {
			t.Fatalf("network %v: %v", network, err)
		}
		a, err := s.Artifact(testCtx(t), scope, o.Result.ArtifactRefs[0])
		if err != nil {
			t.Fatal(err)
		}
		var data struct {
			Text string `json:"text"`
		}
		var r struct {
			Actions map[string]string `json:"actions"`
		}
		if err := json.Unmarshal(a.Bytes, &data); err != nil {
			t.Fatalf("result %s: %v", a.Bytes, err)
		}
		if err := json.Unmarshal([]byte(data.Text), &r); err != nil {
			t.Fatalf("report %q: %v", data.Text, err)
		}
		return r.Actions
	}
	got := run(t, true, 0)
	for a, want := range rows {
		res := got[a]
		switch {
		case strings.HasPrefix(want, "ok"):
			if res != want {
				t.Errorf("network_hosts [%s], %s: %q, want %q", allowed, a, res, want)
			}
		case want == "403":
			if !strings.Contains(res, "403 Forbidden") {
				t.Errorf("network_hosts [%s], %s: %q, want the proxy's 403", allowed, a, res)
			}
		default:
			if res == "" || strings.HasPrefix(res, "ok") {
				t.Errorf("network_hosts [%s], %s: %q, want a failure", allowed, a, res)
			}
		}
	}
	t.Logf("network allowed: %v", got)
	got = run(t, false, 0)
	for a, res := range got {
		if res == "" || strings.HasPrefix(res, "ok") {
			t.Errorf("network_allowed false, %s: %q, want a failure", a, res)
		}
	}
	// The control: with the network layer off, the same host reaches both
	// servers directly and resolves the name.
	got = run(t, true, contain.LayerNetwork)
	for _, a := range []string{"connect:" + allowed, "connect:" + other, "resolve:example.com@" + dns} {
		if !strings.HasPrefix(got[a], "ok") {
			t.Errorf("network layer off (the control), %s: %q, want ok", a, got[a])
		}
	}
}
