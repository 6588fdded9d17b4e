package canon_test

import (
	"errors"
	"fmt"

	"github.com/zeoruntime/runtimeipc/canon"
)

func ExampleCanonicalize() {
	out, err := canon.Canonicalize([]byte(` {"b": [1.0, 1e21, "\u00e9\/"], "a": -0} `))
	fmt.Println(string(out), err)

	_, err = canon.Canonicalize([]byte(`{"n": 9007199254740992}`))
	fmt.Println(errors.Is(err, canon.ErrUnsafeInteger), err)
	// Output:
	// {"a":0,"b":[1,1e+21,"é/"]} <nil>
	// true canon: integer outside ±(2^53-1) at byte offset 6: integer literal 9007199254740992; write it as a string, or as a float literal if precision may be lost
}

func ExampleDigestJSON() {
	// A top-level string: sha256 over the 18 bytes "test-environment".
	d, err := canon.DigestJSON([]byte(`"test-environment"`))
	fmt.Println(d, err)

	// Key order and spacing do not change the digest.
	d1, _ := canon.DigestJSON([]byte(`{"x": 1, "y": [true, null]}`))
	d2, _ := canon.DigestJSON([]byte(`{"y":[true,null],"x":1}`))
	fmt.Println(d1 == d2, d1.Validate())
	// Output:
	// sha256:6ccc40a6522d99f1d5dbe5ed442f418b3579ca8a18dcf62822fa388c659eaaf9 <nil>
	// true <nil>
}

func ExampleUnmarshal() {
	type Attempt struct {
		AttemptID         string  `json:"attempt_id"`
		FencingGeneration int64   `json:"fencing_generation"`
		Note              *string `json:"note,omitempty"`
	}
	var a Attempt
	err := canon.Unmarshal([]byte(`{"attempt_id":"attempt-a","fencing_generation":9007199254740991}`), &a)
	fmt.Println(a.AttemptID, a.FencingGeneration, a.Note == nil, err)

	err = canon.Unmarshal([]byte(`{"attempt_id":"attempt-a","fencing_generation":1.0}`), &a)
	fmt.Println(errors.Is(err, canon.ErrType))

	err = canon.Unmarshal([]byte(`{"attempt_id":"a","fencing_generation":1,"extra":true}`), &a)
	var e *canon.Error
	fmt.Println(errors.As(err, &e), errors.Is(err, canon.ErrUnknownField), e.Pointer)
	// Output:
	// attempt-a 9007199254740991 true <nil>
	// true
	// true true /extra
}
