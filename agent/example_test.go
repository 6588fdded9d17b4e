package agent_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/zeoruntime/runtimeipc/agent"
	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/catalogue"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/memory"
	"github.com/zeoruntime/runtimeipc/manifest"
	"github.com/zeoruntime/runtimeipc/supervise"
	"github.com/zeoruntime/runtimeipc/supervise/supervisetest"
)

// ExampleFacade_Search admits the demo provider for one organization and
// searches it as a project of that organization and as an outsider, for
// whom the same capabilities do not exist.
func ExampleFacade_Search() {
	ctx := context.Background()
	l := memory.New()
	defer l.Close(ctx)
	// The discovery port: a real embedder asks the host (launch.Launcher's
	// Describe); here the binding is taken at its word.
	discover := func(_ context.Context, b manifest.ProviderBinding) (canon.Digest, error) {
		return b.ManifestDigest, nil
	}
	cat, err := catalogue.New(catalogue.Config{Store: l, Discover: discover})
	if err != nil {
		panic(err)
	}
	if _, err := cat.Admit(ctx, catalogue.Admission{Binding: supervisetest.Binding(),
		Audience: []catalogue.Audience{{OrganizationID: "org-a"}}}); err != nil {
		panic(err)
	}
	// Search and describe need no launcher; a run would (Supervisor.Launcher).
	f, err := agent.New(agent.Config{Catalogue: cat, Supervisor: supervise.Config{Ledger: l}})
	if err != nil {
		panic(err)
	}
	inside := ledger.Scope{OrganizationID: "org-a", ProjectID: "web"}
	page, _ := f.Search(ctx, inside, agent.SearchRequest{Query: "demo effects"})
	for _, c := range page.Capabilities {
		fmt.Println(c.CapabilityID, c.Tags)
	}

	outside := ledger.Scope{OrganizationID: "org-b", ProjectID: "web"}
	page, _ = f.Search(ctx, outside, agent.SearchRequest{Query: "demo effects"})
	fmt.Println(len(page.Capabilities), "for org-b")
	_, err = f.Describe(ctx, outside, "example.two_effects@1.0.0")
	fmt.Println(errors.Is(err, catalogue.ErrUnknownCapability), err)
	// Output:
	// example.two_effects@1.0.0 [demo effects]
	// 0 for org-b
	// true catalogue: unknown capability: "example.two_effects@1.0.0"
}
