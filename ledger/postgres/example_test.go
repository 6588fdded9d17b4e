package postgres_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/postgres"
)

// Several controllers open the same schema of one database: the migrations
// run once, and every guarantee of the ledger holds across them. This
// example needs a running PostgreSQL server, so it is compiled, not run.
func ExampleOpen() {
	ctx := context.Background()
	l, err := postgres.Open(ctx, "postgres://postgres@127.0.0.1:5432/test?sslmode=disable&pool_max_conns=16",
		postgres.Options{Schema: "zeo_ledger"})
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close(ctx)

	op, err := l.CreateOperation(ctx, ledger.OperationSpec{
		Scope:          ledger.Scope{OrganizationID: "org-1", ProjectID: "project-1"},
		OperationID:    "op-1",
		CapabilityID:   "example.echo@1.0.0",
		RequestDigest:  "sha256:3728323797a91381fc9531abaaece040023f2ce3860adfd65224b16b33f1c342",
		ManifestDigest: "sha256:0000000000000000000000000000000000000000000000000000000000000000",
		EffectBudget:   2,
		Deadline:       time.Now().Add(time.Minute),
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(op.State)
}
