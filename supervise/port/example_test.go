package port_test

import (
	"errors"
	"fmt"

	"github.com/zeoruntime/runtimeipc/supervise/port"
)

// ExampleCheckDocument: a float the host would read as an unsafe integer
// is refused locally, with its JSON pointer.
func ExampleCheckDocument() {
	err := port.CheckDocument("arguments", map[string]any{"amounts": []any{12.5, 1e20}})
	var de *port.DocumentError
	if errors.As(err, &de) {
		fmt.Println(de.Pointer)
	}
	fmt.Println(port.CheckDocument("arguments", map[string]any{"amounts": []any{12.5, "1e20"}}))
	// Output:
	// /amounts/1
	// <nil>
}
