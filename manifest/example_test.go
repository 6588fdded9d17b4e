package manifest_test

import (
	"fmt"

	"github.com/zeoruntime/runtimeipc/canon"
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

// Arguments come out as the host's pydantic model writes them: its
// date-time with a zero offset as "Z", its UUID in lower case, its URL
// with the path a bare host gets, its integer from 3.0, its default, and
// without the key the model does not declare.
func ExampleValidator_PrepareRequest_pydantic() {
	m := manifest.CapabilityManifest{ID: manifest.CapabilityID{Namespace: "shop", Name: "order", Version: "1.0.0"}}
	// model_json_schema() of:
	//   class Order(BaseModel):
	//       created_at: datetime
	//       order_id: UUID
	//       callback: AnyUrl
	//       quantity: int
	//       channel: str = "web"
	if err := canon.Unmarshal([]byte(`{"type": "object", "title": "Order",
		"required": ["created_at", "order_id", "callback", "quantity"],
		"properties": {
			"created_at": {"format": "date-time", "title": "Created At", "type": "string"},
			"order_id": {"format": "uuid", "title": "Order Id", "type": "string"},
			"callback": {"format": "uri", "minLength": 1, "title": "Callback", "type": "string"},
			"quantity": {"title": "Quantity", "type": "integer"},
			"channel": {"default": "web", "title": "Channel", "type": "string"}}}`), &m.RequestSchema); err != nil {
		fmt.Println(err)
		return
	}
	var v manifest.Validator
	p, err := v.PrepareRequestJSON(m, []byte(`{"created_at": "2026-09-05 08:00:00.5+00:00",
		"order_id": "7C9E6679-7425-40DE-944B-E07FC1F90AE7", "callback": "HTTPS://Example.com",
		"quantity": 3.0, "coupon": "ignored"}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	out, _ := canon.Marshal(p.Arguments)
	fmt.Println(string(out))
	_, err = v.PrepareRequestJSON(m, []byte(`{"created_at": "2026-02-30T08:00:00Z",
		"order_id": "7c9e6679-7425-40de-944b-e07fc1f90ae7", "callback": "https://example.com/", "quantity": 3}`))
	fmt.Println(err)
	// Output:
	// {"callback":"https://example.com/","channel":"web","created_at":"2026-09-05T08:00:00.500000Z","order_id":"7c9e6679-7425-40de-944b-e07fc1f90ae7","quantity":3}
	// manifest: arguments do not match request schema: capability "shop.order@1.0.0" at "/created_at" (pydantic.datetime_parsing): "2026-02-30T08:00:00Z": day value is outside expected range
}
