package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/zeoruntime/runtimeipc/agent"
	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/catalogue"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/bolt"
	"github.com/zeoruntime/runtimeipc/ledger/cataloguestore"
	"github.com/zeoruntime/runtimeipc/manifest"
)

// The bolt ledger keeps a catalogue beside the operations.
var _ catalogue.Store = (*bolt.Ledger)(nil)

// noDiscovery is the Discover port of commands that admit nothing.
func noDiscovery(context.Context, manifest.ProviderBinding) (canon.Digest, error) {
	return "", errors.New("zeoctl: this command runs no discovery")
}

// openCatalogue opens the ledger -ledger names (a bolt file, created only
// when create is set, or a postgres:// DSN) and the catalogue it holds.
func openCatalogue(ctx context.Context, where string, create bool, discover catalogue.DiscoverFunc) (catalogue.Store, *catalogue.Catalogue, error) {
	if where == "" {
		return nil, nil, usagef("-ledger is required: the bolt ledger file (or postgres:// DSN) that holds the catalogue")
	}
	if !create && !isDSN(where) {
		if err := checkLedgerFile(where, true); err != nil {
			return nil, nil, fmt.Errorf("%w; 'zeoctl catalogue admit -ledger PATH ...' admits a provider into a new one", err)
		}
	}
	l, err := openLedger(ctx, where)
	if err != nil {
		return nil, nil, err
	}
	store, ok := l.(catalogue.Store)
	if !ok {
		err := fmt.Errorf("this ledger backend (%T) keeps no catalogue", l)
		closeLedger(l, &err)
		return nil, nil, err
	}
	if discover == nil {
		discover = noDiscovery
	}
	cat, err := catalogue.New(catalogue.Config{Store: store, Discover: discover})
	if err != nil {
		closeLedger(l, &err)
		return nil, nil, err
	}
	return store, cat, nil
}

// audienceFlag is a repeatable ORG or ORG/PROJECT.
type audienceFlag []catalogue.Audience

func (a *audienceFlag) String() string { return "" }

func (a *audienceFlag) Set(s string) error {
	au, err := parseAudience(s)
	if err != nil {
		return err
	}
	*a = append(*a, au)
	return nil
}

func parseAudience(s string) (catalogue.Audience, error) {
	org, project, _ := strings.Cut(s, "/")
	if org == "" || strings.HasSuffix(s, "/") {
		return catalogue.Audience{}, fmt.Errorf("want ORG or ORG/PROJECT, not %q", s)
	}
	return catalogue.Audience{OrganizationID: org, ProjectID: project}, nil
}

// onlyFlag is a repeatable ID=ORG[/PROJECT][,ORG[/PROJECT]...].
type onlyFlag map[string][]catalogue.Audience

func (o onlyFlag) String() string { return "" }

func (o onlyFlag) Set(s string) error {
	id, list, ok := strings.Cut(s, "=")
	if !ok || id == "" {
		return fmt.Errorf("want CAPABILITY=ORG[/PROJECT][,...], not %q", s)
	}
	if _, ok := o[id]; !ok {
		o[id] = []catalogue.Audience{}
	}
	if list == "" {
		return nil
	}
	for _, part := range strings.Split(list, ",") {
		au, err := parseAudience(part)
		if err != nil {
			return err
		}
		o[id] = append(o[id], au)
	}
	return nil
}

func audienceText(aud []catalogue.Audience) string {
	if len(aud) == 0 {
		return "nobody"
	}
	parts := make([]string, len(aud))
	for i, a := range aud {
		parts[i] = a.OrganizationID
		if a.ProjectID != "" {
			parts[i] += "/" + a.ProjectID
		} else {
			parts[i] += " (every project)"
		}
	}
	return strings.Join(parts, ", ")
}

func catalogueAdmitCommand() *command {
	return &command{
		name:      "catalogue admit",
		usageLine: "catalogue admit -ledger PATH (-python PATH | -host PATH | -simulated) [-binding FILE] [-generation N] -audience ORG[/PROJECT]... [-only ID=ORG[/PROJECT],...]... [-json]",
		short:     "admit a provider generation into the catalogue",
		long: `Catalogue admit records a provider binding as the provider's new generation
in the catalogue the ledger holds (the ledger file is created if needed).
The binding is validated as the host validates it, and the host's own static
discovery (describe) must report the binding's manifest digest; otherwise
nothing is recorded.

A provider is its distribution and factory. Each generation must be greater
than the last one admitted (-generation N overrides the binding's); the new
one serves every new operation at once, while an operation started on an
older generation keeps that exact binding until it ends.

-audience names who may see and run the provider's capabilities: an
organization (every project) or ORG/PROJECT; repeat it for several.
-only ID=ORG[/PROJECT],... replaces the audience of one capability; -only
ID= hides it from everyone. Outside its audience a capability does not
exist for search, describe and run.

Capabilities whose requirements name credentials or services run only with
a connection account the project consented to ('zeoctl catalogue consent
grant'); a new generation that needs more is admitted, but does not run
until consent is granted.
`,
		flags: func(fs *flag.FlagSet) runFunc {
			var host hostFlags
			host.register(fs)
			path := fs.String("ledger", "", "the bolt ledger `file` (required; created if needed), or a postgres:// DSN")
			gen := fs.Int64("generation", 0, "the generation to admit (default: the binding's)")
			var audience audienceFlag
			fs.Var(&audience, "audience", "an `ORG` or ORG/PROJECT that may see and run the capabilities (repeatable; required unless -only gives the audiences)")
			only := onlyFlag{}
			fs.Var(only, "only", "`ID=ORG[/PROJECT],...`: the audience of one capability instead (repeatable; ID= hides it)")
			asJSON := fs.Bool("json", false, "print the admitted generation as JSON")
			return func(ctx context.Context, e *env, args []string) (err error) {
				if err := noArgs(args); err != nil {
					return err
				}
				if err := host.check(); err != nil {
					return err
				}
				if len(audience) == 0 && len(only) == 0 {
					return usagef("-audience is required: who may see and run the capabilities (ORG or ORG/PROJECT)")
				}
				b, err := host.loadBinding()
				if err != nil {
					return err
				}
				if *gen != 0 {
					b.Generation = *gen
				}
				ln, cleanup, err := host.launcher(e)
				if err != nil {
					return err
				}
				defer cleanup()
				describe := agent.Discover(ln)
				discover := func(ctx context.Context, b manifest.ProviderBinding) (canon.Digest, error) {
					d, err := describe(ctx, b)
					return d, discoveryHint(err, false)
				}
				l, cat, err := openCatalogue(ctx, *path, true, discover)
				if err != nil {
					return err
				}
				defer closeLedger(l, &err)
				e.progress("asking %s to describe %s generation %d", host.describeHost(), b.Distribution, b.Generation)
				g, err := cat.Admit(ctx, catalogue.Admission{Binding: b, Audience: audience, CapabilityAudience: only})
				if err != nil {
					if errors.Is(err, cataloguestore.ErrStaleGeneration) {
						return fmt.Errorf("%w (give a greater -generation; 'zeoctl catalogue generations' lists those admitted)", err)
					}
					return err
				}
				if *asJSON {
					return printJSON(e.stdout, generationJSON(g, true))
				}
				fmt.Fprintf(e.stdout, "admitted %s (%s) generation %d, manifest digest %s\n", g.Provider.Distribution, g.Provider.Factory, g.Generation, g.ManifestDigest)
				printGeneration(e.stdout, g)
				return nil
			}
		},
	}
}

// generationJSON is a generation's -json form.
func generationJSON(g catalogue.Generation, full bool) map[string]any {
	out := map[string]any{
		"distribution": g.Provider.Distribution, "factory": g.Provider.Factory, "generation": g.Generation,
		"binding_digest": g.BindingDigest, "manifest_digest": g.ManifestDigest,
		"admitted_at": g.AdmittedAt.UTC().Format(time.RFC3339Nano),
	}
	if full {
		capAud := map[string]any{}
		for id, aud := range g.CapabilityAudience {
			capAud[id] = aud
		}
		out["audience"], out["capability_audience"], out["capabilities"] = g.Audience, capAud, g.Capabilities
	}
	return out
}

// printGeneration lists a generation's capabilities and who sees each.
func printGeneration(w io.Writer, g catalogue.Generation) {
	fmt.Fprintf(w, "  audience  %s\n", audienceText(g.Audience))
	for _, id := range g.Capabilities {
		if aud, ok := g.CapabilityAudience[id]; ok {
			fmt.Fprintf(w, "  %s  (only %s)\n", id, audienceText(aud))
		} else {
			fmt.Fprintf(w, "  %s\n", id)
		}
	}
}

func catalogueListCommand() *command {
	return &command{
		name:      "catalogue list",
		usageLine: "catalogue list -ledger PATH [-org ID] [-project ID] [-json]",
		short:     "list the admitted providers, or what one project sees",
		long: `Catalogue list prints each provider's current generation with its
capabilities and who may see them.

With -org or -project it prints instead the catalogue as that project sees
it (the half not given defaulting to org-local or project-local; see 'zeoctl
help scope'): the capabilities it may run (nothing else exists for it), and
what it has consented to per connection account.
`,
		flags: func(fs *flag.FlagSet) runFunc {
			var f ledgerFlags
			f.register(fs, listingScope)
			return func(ctx context.Context, e *env, args []string) (err error) {
				if err := noArgs(args); err != nil {
					return err
				}
				l, cat, err := openCatalogue(ctx, f.path, false, nil)
				if err != nil {
					return err
				}
				defer closeLedger(l, &err)
				if !f.filtered() {
					return listProviders(ctx, e, cat, f.json)
				}
				return listScope(ctx, e, cat, f.scope(), f.json)
			}
		},
	}
}

func listProviders(ctx context.Context, e *env, cat *catalogue.Catalogue, asJSON bool) error {
	gens, err := cat.Providers(ctx)
	if err != nil {
		return err
	}
	if asJSON {
		out := make([]map[string]any, len(gens))
		for i, g := range gens {
			out[i] = generationJSON(g, true)
		}
		return printJSON(e.stdout, out)
	}
	if len(gens) == 0 {
		fmt.Fprintln(e.stdout, "the catalogue is empty ('zeoctl catalogue admit' admits a provider)")
		return nil
	}
	for _, g := range gens {
		fmt.Fprintf(e.stdout, "%s (%s) generation %d, admitted %s\n", g.Provider.Distribution, g.Provider.Factory, g.Generation,
			g.AdmittedAt.UTC().Format(time.RFC3339))
		printGeneration(e.stdout, g)
	}
	return nil
}

func listScope(ctx context.Context, e *env, cat *catalogue.Catalogue, scope ledger.Scope, asJSON bool) error {
	v, err := cat.View(ctx, scope)
	if err != nil {
		return err
	}
	consents, err := cat.Consents(ctx, scope)
	if err != nil {
		return err
	}
	type capJSON struct {
		CapabilityID string                     `json:"capability_id"`
		Provider     cataloguestore.ProviderKey `json:"provider"`
		Generation   int64                      `json:"generation"`
		NeedsAccount bool                       `json:"needs_account"`
	}
	caps := make([]capJSON, 0, len(v.Capabilities()))
	for _, c := range v.Capabilities() {
		caps = append(caps, capJSON{c.ID, c.Provider, c.Generation, c.NeedsAccount})
	}
	if consents == nil {
		consents = []cataloguestore.Consent{}
	}
	if asJSON {
		return printJSON(e.stdout, map[string]any{"organization_id": scope.OrganizationID, "project_id": scope.ProjectID,
			"capabilities": caps, "consents": consents})
	}
	fmt.Fprintf(e.stdout, "%s/%s sees %d capabilities\n", scope.OrganizationID, scope.ProjectID, len(caps))
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	if len(caps) > 0 {
		fmt.Fprintln(tw, "CAPABILITY\tPROVIDER\tGENERATION\tNEEDS ACCOUNT")
		for _, c := range caps {
			fmt.Fprintf(tw, "%s\t%s (%s)\t%d\t%v\n", c.CapabilityID, c.Provider.Distribution, c.Provider.Factory, c.Generation, c.NeedsAccount)
		}
		tw.Flush()
	}
	for _, c := range consents {
		fmt.Fprintf(e.stdout, "consent for account %s:\n", c.Account)
		printConsent(e.stdout, c)
	}
	return nil
}

func catalogueGenerationsCommand() *command {
	return &command{
		name:      "catalogue generations",
		usageLine: "catalogue generations -ledger PATH [-distribution NAME -factory NAME] [-json]",
		short:     "list the generations admitted for each provider",
		long: `Catalogue generations prints every generation admitted for a provider, in
increasing order, with its digests and when it was admitted; without
-distribution and -factory, for every provider. The last one serves new
operations; operations pinned to an older one keep it until they end.
`,
		flags: func(fs *flag.FlagSet) runFunc {
			path := fs.String("ledger", "", "the bolt ledger `file` (required), or a postgres:// DSN")
			dist := fs.String("distribution", "", "the provider's distribution")
			factory := fs.String("factory", "", "the provider's factory")
			asJSON := fs.Bool("json", false, "print JSON")
			return func(ctx context.Context, e *env, args []string) (err error) {
				if err := noArgs(args); err != nil {
					return err
				}
				if (*dist == "") != (*factory == "") {
					return usagef("give both -distribution and -factory, or neither")
				}
				l, cat, err := openCatalogue(ctx, *path, false, nil)
				if err != nil {
					return err
				}
				defer closeLedger(l, &err)
				var keys []cataloguestore.ProviderKey
				if *dist != "" {
					keys = []cataloguestore.ProviderKey{{Distribution: *dist, Factory: *factory}}
				} else {
					gens, err := cat.Providers(ctx)
					if err != nil {
						return err
					}
					for _, g := range gens {
						keys = append(keys, g.Provider)
					}
				}
				out := []map[string]any{}
				tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
				if !*asJSON {
					fmt.Fprintln(tw, "DISTRIBUTION\tFACTORY\tGENERATION\tADMITTED\tMANIFEST DIGEST")
				}
				for _, k := range keys {
					gens, err := cat.Generations(ctx, k)
					if err != nil {
						return err
					}
					if len(gens) == 0 {
						return fmt.Errorf("no generation of %s (%s) is admitted ('zeoctl catalogue list' shows the providers)", k.Distribution, k.Factory)
					}
					for _, g := range gens {
						out = append(out, generationJSON(g, false))
						fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", k.Distribution, k.Factory, g.Generation, g.AdmittedAt.UTC().Format(time.RFC3339), g.ManifestDigest)
					}
				}
				if *asJSON {
					return printJSON(e.stdout, out)
				}
				return tw.Flush()
			}
		},
	}
}

// consentFlags are the sets of a consent.
type consentFlags struct {
	ledgerFlags
	account                                                            string
	capabilities, credentials, services, effectKinds, effectOperations listFlag
}

func (f *consentFlags) register(fs *flag.FlagSet) {
	f.ledgerFlags.register(fs, oneScope)
	fs.StringVar(&f.account, "account", "", "the connection `account` (required): an effect request's connection_ref")
	fs.Var(&f.capabilities, "capability", "a capability `ID` that may run with the account (repeatable)")
	fs.Var(&f.credentials, "credential", "a credential `name` (repeatable)")
	fs.Var(&f.services, "service", "a service `name` (repeatable)")
	fs.Var(&f.effectKinds, "effect-kind", "an effect `kind`: read, write, delete, external_communication, financial, security_sensitive (repeatable)")
	fs.Var(&f.effectOperations, "effect-operation", "an effect `operation` an effect request may name (repeatable)")
}

func (f *consentFlags) consent() cataloguestore.Consent {
	return cataloguestore.Consent{Scope: f.scope(), Account: f.account, Capabilities: f.capabilities, Credentials: f.credentials,
		Services: f.services, EffectKinds: f.effectKinds, EffectOperations: f.effectOperations}
}

func printConsent(w io.Writer, c cataloguestore.Consent) {
	for _, row := range []struct {
		name string
		set  []string
	}{{"capabilities", c.Capabilities}, {"credentials", c.Credentials}, {"services", c.Services},
		{"effect kinds", c.EffectKinds}, {"effect operations", c.EffectOperations}} {
		v := strings.Join(row.set, ", ")
		if v == "" {
			v = "-"
		}
		fmt.Fprintf(w, "  %-18s %s\n", row.name, v)
	}
}

func consentCommand(grant bool) *command {
	verb, name := "revoke", "catalogue consent revoke"
	short := "withdraw consent from a project's connection account"
	long := `Catalogue consent revoke removes what is named from the consent of a
project's connection account. It takes effect at the next check: the next
run, and the admission and the next effect of runs already started.
`
	if grant {
		verb, name = "grant", "catalogue consent grant"
		short = "consent to what a project's connection account may be used for"
		long = `Catalogue consent grant adds to what a project has consented to for one
connection account: the capabilities that may run with it, and the
credentials, services, effect kinds and effect operations they may use.
Consent is only ever widened this way: a new provider generation whose
capabilities need more is admitted, but they do not run until it is granted.
A capability whose requirements name credentials or services runs only with
an account whose consent covers them; when several accounts could serve a
run, the run must name one.
`
	}
	return &command{
		name:      name,
		usageLine: name + " -ledger PATH [-org ID] [-project ID] -account NAME [-capability ID]... [-credential NAME]... [-service NAME]... [-effect-kind KIND]... [-effect-operation OP]... [-json]",
		short:     short,
		long:      long,
		flags: func(fs *flag.FlagSet) runFunc {
			var f consentFlags
			f.register(fs)
			return func(ctx context.Context, e *env, args []string) (err error) {
				if err := noArgs(args); err != nil {
					return err
				}
				if f.account == "" {
					return usagef("-account is required: the connection account whose consent changes")
				}
				l, cat, err := openCatalogue(ctx, f.path, false, nil)
				if err != nil {
					return err
				}
				defer closeLedger(l, &err)
				var c cataloguestore.Consent
				if grant {
					c, err = cat.Grant(ctx, f.consent())
				} else {
					c, err = cat.Revoke(ctx, f.consent())
				}
				if err != nil {
					return err
				}
				if f.json {
					return printJSON(e.stdout, c)
				}
				sc := f.scope()
				fmt.Fprintf(e.stdout, "consent of %s/%s for account %s after %s:\n", sc.OrganizationID, sc.ProjectID, f.account, verb)
				printConsent(e.stdout, c)
				return nil
			}
		},
	}
}
