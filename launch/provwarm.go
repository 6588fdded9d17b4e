package launch

import (
	_ "embed"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/manifest"
)

// provwarmSource is the provider-warm fork server, a Python program of
// ours (standard library only) that uses zygote.py's child preparation.
//
//go:embed provwarm.py
var provwarmSource []byte

// ProviderWarm makes a Zygote provider-warm (ZygoteConfig.ProviderWarm;
// doc/design.md, “Provider-warm launch”): its server, started for one
// provider binding (ZygoteConfig.Provider) and one tenant, sets the host's
// managed-execution latch, validates the admitted inventory, imports the
// provider's factory and activates its generation once, with the host's
// own functions, and then forks one child per invocation, which receives
// its context, socket and request from the launcher on a channel of its
// own, never through the server. An invocation of another binding or
// another tenant is launched cold; so is every invocation when the host
// is not one of Hosts, or when loading the provider left the server with
// threads, descriptors or child processes (the Launcher's logger says
// why).
type ProviderWarm struct {
	// OrganizationID and ProjectID name the one tenant whose invocations
	// the server serves: a server is never shared between tenants.
	// Required.
	OrganizationID, ProjectID string
	// Hosts lists the host versions the server was checked against: it
	// becomes warm only for a host whose pinned source files (see
	// HostVersion) are byte for byte one of these. Required.
	Hosts []HostVersion
}

// HostVersion pins one version of the host package (the module after -m
// in Config.Args) by the source files a provider-warm server relies on:
// host.py, whose ManagedHost.invoke activates the generation through the
// module's CandidateCatalogue, and catalogue.py, whose
// validate_inventory, installed_factory and CandidateCatalogue.activate
// the server calls.
type HostVersion struct {
	// Name says which version this is, for logs ("zeocore 0.11.0").
	Name string
	// Files maps "host.py" and "catalogue.py" to the sha256 digest of
	// their bytes.
	Files map[string]canon.Digest
}

// pinnedHostFiles are the files of the host package a HostVersion pins.
var pinnedHostFiles = []string{"catalogue.py", "host.py"}

// providerWarmSpec is a ProviderWarm checked at construction.
type providerWarmSpec struct {
	cfg           ProviderWarm
	bindingDigest canon.Digest // of ZygoteConfig.Provider's canonical JSON
}

// checkProviderWarm validates pw for binding b.
func checkProviderWarm(pw ProviderWarm, b manifest.ProviderBinding) (*providerWarmSpec, []error) {
	var errs []error
	if pw.OrganizationID == "" || pw.ProjectID == "" {
		errs = append(errs, errors.New("ProviderWarm: OrganizationID and ProjectID name the one tenant a server serves, and are required"))
	}
	if len(pw.Hosts) == 0 {
		errs = append(errs, errors.New("ProviderWarm: Hosts is empty: name at least one host version the server was checked against"))
	}
	for i, h := range pw.Hosts {
		if got := slices.Sorted(maps.Keys(h.Files)); !slices.Equal(got, pinnedHostFiles) {
			errs = append(errs, fmt.Errorf("ProviderWarm: Hosts[%d] (%s) pins %q, want exactly %q", i, h.Name, got, pinnedHostFiles))
		}
		for f, d := range h.Files {
			if err := d.Validate(); err != nil {
				errs = append(errs, fmt.Errorf("ProviderWarm: Hosts[%d] (%s) %s: %w", i, h.Name, f, err))
			}
		}
	}
	d, err := bindingDigest(b)
	if err != nil {
		errs = append(errs, fmt.Errorf("ProviderWarm: the binding: %w", err))
	}
	pw.Hosts = slices.Clone(pw.Hosts)
	return &providerWarmSpec{cfg: pw, bindingDigest: d}, errs
}

// bindingDigest is the digest of b's canonical JSON, which names the
// binding a provider-warm server activated.
func bindingDigest(b manifest.ProviderBinding) (canon.Digest, error) {
	raw, err := b.AppendCanonical(nil)
	if err != nil {
		return "", err
	}
	return canon.Sum(raw), nil
}

// ProviderWarmStats is what the current provider-warm server reported
// when it became warm.
type ProviderWarmStats struct {
	// Host is the HostVersion.Name it recognised.
	Host string
	// Phases is how long each generation-dependent step took in it
	// ("host_import", "validating the inventory", "importing the
	// provider", "activating the generation", ...).
	Phases map[string]time.Duration
}
