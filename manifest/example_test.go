package manifest_test

import (
	"fmt"

	"github.com/zeoruntime/runtimeipc/manifest"
)

func ExampleInventoryDigest() {
	d, _ := manifest.InventoryDigest(nil)
	fmt.Println(d)
	// Output: sha256:4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945
}

func ExampleValidator_PrepareRequest() {
	echo, err := manifest.DecodeManifest([]byte(`{
		"id": "example.echo@1.0.0",
		"description": "An echo for host conformance.",
		"request_schema": {"type": "object", "title": "Request", "required": ["text"],
			"properties": {"organization_id": {"default": "org-a", "title": "Organization Id", "type": "string"},
			               "text": {"title": "Text", "type": "string"}}},
		"response_schema": {"type": "object", "title": "Response", "required": ["text"],
			"properties": {"text": {"title": "Text", "type": "string"}}},
		"examples": [{"request": {"text": "hello"}}],
		"error_codes": [], "effects": {"kinds": ["read"]}, "requirements": {},
		"tags": [], "metadata": {}, "deprecation": {}}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	var v manifest.Validator // zero value ready; share it, it caches compiled schemas
	p, err := v.PrepareRequest(echo, map[string]any{"text": "hello"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(p.CapabilityID, p.Arguments)
	fmt.Println(p.RequestDigest)
	_, err = v.PrepareRequest(echo, map[string]any{"text": 42})
	fmt.Println(err)
	// Output:
	// example.echo@1.0.0 map[organization_id:org-a text:hello]
	// sha256:3728323797a91381fc9531abaaece040023f2ce3860adfd65224b16b33f1c342
	// manifest: arguments do not match request schema: capability "example.echo@1.0.0" at "/text" (arguments.schema:type): got number, want string
}

func ExampleParseCapabilityID() {
	id, err := manifest.ParseCapabilityID("google.calendar.event.create@1.0.0")
	fmt.Printf("%q %q %q %v\n", id.Namespace, id.Name, id.Version, err)
	// Output: "google.calendar.event" "create" "1.0.0" <nil>
}
