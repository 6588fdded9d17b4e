package bolt_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/bolt"
)

// The file's lock is the ledger's single-owner lock: while one Ledger has
// the file open, another Open of it (here in the same process; another
// process is refused alike) waits at most LockTimeout and fails with
// ledger.ErrLocked. Once the owner closes, the next Open owns the file and
// finds everything the first one recorded.
func Example_ownership() {
	dir, err := os.MkdirTemp("", "ledger-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "ledger.db")
	ctx := context.Background()

	owner, err := bolt.Open(path, bolt.Options{})
	if err != nil {
		log.Fatal(err)
	}
	scope := ledger.Scope{OrganizationID: "org-a", ProjectID: "project-a"}
	request := canon.Sum([]byte(`{"arguments":{},"capability_id":"example.echo@1.0.0"}`))
	if _, err := owner.CreateOperation(ctx, ledger.OperationSpec{Scope: scope, OperationID: "op-1",
		CapabilityID: "example.echo@1.0.0", RequestDigest: request, ManifestDigest: request}); err != nil {
		log.Fatal(err)
	}

	_, err = bolt.Open(path, bolt.Options{LockTimeout: 50 * time.Millisecond})
	fmt.Println("second owner refused:", errors.Is(err, ledger.ErrLocked))

	if err := owner.Close(ctx); err != nil {
		log.Fatal(err)
	}
	next, err := bolt.Open(path, bolt.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer next.Close(ctx)
	v, err := next.Operation(ctx, scope, "op-1")
	fmt.Println("after the owner closed:", v.Operation.OperationID, v.Operation.State, err)
	// Output:
	// second owner refused: true
	// after the owner closed: op-1 open <nil>
}
