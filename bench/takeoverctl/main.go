// Command takeoverctl is the controller the takeover benchmark kills: it
// registers a Supervisor on a PostgreSQL ledger with a short lease, invokes
// one operation of example.two_effects@1.0.0 through the simulated host,
// and prints "dispatching" when its dispatcher is called for the first
// effect, which then never returns. The benchmark kills it there (SIGKILL)
// and measures how long another controller takes to fence the attempt off.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/launch/contain"
	"github.com/zeoruntime/runtimeipc/launch/environment"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/postgres"
	"github.com/zeoruntime/runtimeipc/manifest"
	"github.com/zeoruntime/runtimeipc/supervise"
	"github.com/zeoruntime/runtimeipc/supervise/port"
)

// blocking answers no dispatch: the first one says so on stdout and waits
// for the kill.
type blocking struct{}

func (blocking) Dispatch(ctx context.Context, _ port.Dispatch) (port.Receipt, error) {
	fmt.Println("dispatching")
	<-ctx.Done()
	return port.Receipt{}, ctx.Err()
}

func main() {
	contain.Init() // the hosts are contained: this program is their containment init
	dsn := flag.String("dsn", "", "PostgreSQL DSN")
	schema := flag.String("schema", "", "ledger schema")
	host := flag.String("host", "", "the simulated host executable")
	binding := flag.String("binding", "", "the provider binding file")
	op := flag.String("op", "", "operation id")
	ttl := flag.Duration("ttl", time.Second, "lease ttl")
	flag.Parse()
	if err := run(*dsn, *schema, *host, *binding, *op, *ttl); err != nil {
		fmt.Fprintln(os.Stderr, "takeoverctl:", err)
		os.Exit(1)
	}
}

func run(dsn, schema, host, bindingPath, op string, ttl time.Duration) error {
	ctx := context.Background()
	raw, err := os.ReadFile(bindingPath)
	if err != nil {
		return err
	}
	b, err := manifest.DecodeBinding(raw)
	if err != nil {
		return err
	}
	l, err := postgres.Open(ctx, dsn, postgres.Options{Schema: schema})
	if err != nil {
		return err
	}
	defer l.Close(ctx)
	ln, err := launch.New(launch.Config{Interpreter: host, Dir: os.TempDir(), Verifier: environment.Trust{}, AllowRootHost: true})
	if err != nil {
		return err
	}
	s, err := supervise.New(supervise.Config{Ledger: l, Launcher: ln, Provider: b, HostPythonVersion: b.PythonVersion,
		Dispatcher: blocking{}, SeatID: "seat", RuntimeBindingID: "runtime", Workspace: "workspace", LeaseTTL: ttl})
	if err != nil {
		return err
	}
	_, err = s.Invoke(ctx, supervise.Call{Scope: ledger.Scope{OrganizationID: "org", ProjectID: "project"}, OperationID: op,
		CapabilityID: "example.two_effects@1.0.0", Arguments: map[string]any{"target": "doc-1"}, EffectBudget: 2})
	return err
}
