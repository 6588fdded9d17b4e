package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/launch/discovery"
	"github.com/zeoruntime/runtimeipc/manifest"
)

// discoveryFlags are the flags of the static discovery commands.
type discoveryFlags struct {
	host    hostFlags
	json    bool
	timeout time.Duration
}

func (d *discoveryFlags) register(fs *flag.FlagSet) {
	d.host.register(fs)
	fs.BoolVar(&d.json, "json", false, "print the host's answer as JSON")
	fs.DurationVar(&d.timeout, "timeout", 30*time.Second, "bound on the host's answer")
}

// withDiscoveryFlags registers the discovery flags and returns the command
// that runs run with them.
func withDiscoveryFlags(run func(ctx context.Context, e *env, d *discoveryFlags, args []string) error) func(*flag.FlagSet) runFunc {
	return func(fs *flag.FlagSet) runFunc {
		d := &discoveryFlags{}
		d.register(fs)
		return func(ctx context.Context, e *env, args []string) error { return run(ctx, e, d, args) }
	}
}

// start checks the flags and returns the binding and a launcher.
func (d *discoveryFlags) start(ctx context.Context, e *env) (context.Context, func(), manifest.ProviderBinding, *launch.Launcher, error) {
	if err := d.host.check(); err != nil {
		return nil, nil, manifest.ProviderBinding{}, nil, err
	}
	b, err := d.host.loadBinding()
	if err != nil {
		return nil, nil, b, nil, err
	}
	l, cleanup, err := d.host.launcher(e)
	if err != nil {
		return nil, nil, b, nil, err
	}
	ctx, cancel := withTimeout(ctx, d.timeout)
	return ctx, func() { cancel(); cleanup() }, b, l, nil
}

const discoveryHelpTail = `
The host is -python (a provider environment's interpreter, run as
'python -m zeo_core.adapters.runtime_host'), -host (its zeo-capability
script) or -simulated (zeoctl's own simulated host, for trying zeoctl out).
Static discovery never imports the provider's factory, reads credentials or
uses the network: the host validates the binding's inventory and answers
from it. zeoctl checks that the answer agrees with the binding.
`

func describeCommand() *command {
	return &command{
		name:      "describe",
		usageLine: "describe (-python PATH | -host PATH | -simulated) [-binding FILE] [-json]",
		short:     "ask the host whether a provider binding is statically valid",
		long: `Describe runs the host's 'describe' on the provider binding and prints its
answer: the distribution, version and manifest digest the host accepted, and
its readiness (static_inventory_valid; never an authorization).
` + discoveryHelpTail,
		flags: withDiscoveryFlags(func(ctx context.Context, e *env, d *discoveryFlags, args []string) error {
			if err := noArgs(args); err != nil {
				return err
			}
			ctx, done, b, l, err := d.start(ctx, e)
			if err != nil {
				return err
			}
			defer done()
			e.progress("asking %s to describe %s %s", d.host.describeHost(), b.Distribution, b.Version)
			desc, err := discovery.Describe(ctx, l, b)
			if err != nil {
				return discoveryHint(err, false)
			}
			if d.json {
				return printJSON(e.stdout, desc)
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintf(tw, "distribution\t%s %s\n", desc.Distribution, desc.Version)
			fmt.Fprintf(tw, "manifest digest\t%s\n", desc.ManifestDigest)
			fmt.Fprintf(tw, "capabilities\t%d\n", len(b.Manifests))
			fmt.Fprintf(tw, "readiness\t%s (authorized: %t)\n", desc.Readiness, desc.Authorized)
			return tw.Flush()
		}),
	}
}

func capabilitiesListCommand() *command {
	return &command{
		name:      "capabilities list",
		usageLine: "capabilities list (-python PATH | -host PATH | -simulated) [-binding FILE] [-limit N] [-offset N] [-json]",
		short:     "list a provider's capabilities as the host serves them",
		long: `Capabilities list asks the host for one page of the binding's inventory
(projected manifests, in canonical-id order) and prints each capability's id,
effects, required services and description. -limit is 1..100.
` + discoveryHelpTail,
		flags: func(fs *flag.FlagSet) runFunc {
			var d discoveryFlags
			d.register(fs)
			limit := fs.Int("limit", 20, "page size, 1..100")
			offset := fs.Int("offset", 0, "index of the first capability")
			return func(ctx context.Context, e *env, args []string) error {
				if err := noArgs(args); err != nil {
					return err
				}
				if *limit < 1 || *limit > 100 || *offset < 0 {
					return usagef("-limit must be 1..100 and -offset at least 0")
				}
				ctx, done, b, l, err := d.start(ctx, e)
				if err != nil {
					return err
				}
				defer done()
				e.progress("asking %s for capabilities %d.. of %s", d.host.describeHost(), *offset, b.Distribution)
				page, err := discovery.ListCapabilities(ctx, l, b, *limit, *offset)
				if err != nil {
					return discoveryHint(err, false)
				}
				if d.json {
					return printJSON(e.stdout, page)
				}
				printCapabilities(e.stdout, page.Capabilities)
				if page.NextOffset != nil {
					fmt.Fprintf(e.stdout, "(more: -offset %d)\n", *page.NextOffset)
				}
				return nil
			}
		},
	}
}

// printCapabilities writes one line per capability.
func printCapabilities(w io.Writer, ms []manifest.CapabilityManifest) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CAPABILITY\tEFFECTS\tSERVICES\tDESCRIPTION")
	for _, m := range ms {
		kinds := make([]string, len(m.Effects.Kinds))
		for i, k := range m.Effects.Kinds {
			kinds[i] = string(k)
		}
		services := strings.Join(m.Requirements.Services, ",")
		if services == "" {
			services = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", capabilityID(m), strings.Join(kinds, ","), services, m.Description)
	}
	tw.Flush()
}

// capabilityID is a manifest's canonical id.
func capabilityID(m manifest.CapabilityManifest) string {
	return m.ID.Namespace + "." + m.ID.Name + "@" + m.ID.Version
}

func capabilitiesDescribeCommand() *command {
	return &command{
		name:      "capabilities describe",
		usageLine: "capabilities describe (-python PATH | -host PATH | -simulated) [-binding FILE] ID",
		short:     "print one capability's manifest as the host serves it",
		long: `Capabilities describe asks the host for the manifest of capability ID
(namespace.name@version, exactly) and prints it as JSON: its request and
response schemas, effects, requirements and examples.
` + discoveryHelpTail,
		flags: withDiscoveryFlags(func(ctx context.Context, e *env, d *discoveryFlags, args []string) error {
			if len(args) != 1 {
				return usagef("want exactly one capability ID (namespace.name@version)")
			}
			if _, err := manifest.ParseCapabilityID(args[0]); err != nil {
				return usagef("%q is not a capability id (namespace.name@version): %v", args[0], err)
			}
			ctx, done, b, l, err := d.start(ctx, e)
			if err != nil {
				return err
			}
			defer done()
			if _, err := manifest.Describe(b.Manifests, args[0]); err != nil {
				return fmt.Errorf("the binding has no capability %s; 'zeoctl capabilities list' shows those it has", args[0])
			}
			e.progress("asking %s to describe %s", d.host.describeHost(), args[0])
			m, err := discovery.DescribeCapability(ctx, l, b, args[0])
			if err != nil {
				return discoveryHint(err, false)
			}
			return printJSON(e.stdout, m)
		}),
	}
}

// printJSON writes v as indented JSON: canonical when v has a canonical
// form (wire documents), plain encoding/json otherwise (records with times).
func printJSON(w io.Writer, v any) error {
	b, err := canon.Marshal(v)
	if err != nil {
		if b, err = json.Marshal(v); err != nil {
			return err
		}
	}
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		return err
	}
	out.WriteByte('\n')
	_, err = w.Write(out.Bytes())
	return err
}
