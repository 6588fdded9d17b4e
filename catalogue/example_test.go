package catalogue_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/catalogue"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/cataloguestore"
	"github.com/zeoruntime/runtimeipc/ledger/memory"
	"github.com/zeoruntime/runtimeipc/manifest"
)

// Example admits a provider whose one capability needs a credential,
// shows that it is invisible outside its organization, and that it runs
// only once the scope consents for a connection account.
func Example() {
	ctx := context.Background()
	m, err := manifest.DecodeManifest([]byte(`{"id": "example.mail@1.0.0", "description": "Sends mail.",
	  "request_schema": {"type": "object"}, "response_schema": {"type": "object"}, "examples": [],
	  "error_codes": [], "effects": {"kinds": ["external_communication"]},
	  "requirements": {"credentials": ["gmail"]}, "tags": [], "metadata": {}, "deprecation": {}}`))
	if err != nil {
		panic(err)
	}
	ms := []manifest.CapabilityManifest{m}
	digest, err := manifest.InventoryDigest(ms)
	if err != nil {
		panic(err)
	}
	binding := manifest.ProviderBinding{ProtocolVersion: 1, Distribution: "mailer", Version: "1.0.0", PythonVersion: "3.14.0",
		EnvironmentDigest: canon.Sum([]byte("environment")), Factory: "mailer.provider:factory",
		Manifests: ms, ManifestDigest: digest, Generation: 1}

	l := memory.New()
	defer l.Close(ctx)
	cat, err := catalogue.New(catalogue.Config{Store: l,
		// With package launch: the host's own describe of the binding.
		Discover: func(context.Context, manifest.ProviderBinding) (canon.Digest, error) { return digest, nil }})
	if err != nil {
		panic(err)
	}
	if _, err := cat.Admit(ctx, catalogue.Admission{Binding: binding,
		Audience: []catalogue.Audience{{OrganizationID: "acme"}}}); err != nil {
		panic(err)
	}

	outsider := ledger.Scope{OrganizationID: "globex", ProjectID: "web"}
	_, err = cat.Prepare(ctx, catalogue.Request{Scope: outsider, OperationID: "op-1", CapabilityID: "example.mail@1.0.0"})
	fmt.Println(err)

	scope := ledger.Scope{OrganizationID: "acme", ProjectID: "web"}
	_, err = cat.Prepare(ctx, catalogue.Request{Scope: scope, OperationID: "op-1", CapabilityID: "example.mail@1.0.0"})
	fmt.Println(errors.Is(err, catalogue.ErrConsentRequired))

	if _, err := cat.Grant(ctx, cataloguestore.Consent{Scope: scope, Account: "sales@acme", Capabilities: []string{"example.mail@1.0.0"},
		Credentials: []string{"gmail"}, EffectKinds: []string{"external_communication"}}); err != nil {
		panic(err)
	}
	plan, err := cat.Prepare(ctx, catalogue.Request{Scope: scope, OperationID: "op-1", CapabilityID: "example.mail@1.0.0"})
	if err != nil {
		panic(err)
	}
	fmt.Println(plan.Pin.Account, plan.Pin.Generation)
	// Output:
	// catalogue: unknown capability: "example.mail@1.0.0"
	// true
	// sales@acme 1
}
