package main

import (
	"context"
	"errors"
	"flag"

	"github.com/zeoruntime/runtimeipc/supervise/port"
)

// grantFlags are what a capability may use besides the effect port, for
// every command that runs one.
type grantFlags struct {
	credentials, binaries, networkHosts listFlag
	network                             bool
}

func (g *grantFlags) register(fs *flag.FlagSet) {
	fs.Var(&g.credentials, "credential", "a credential `name` the capability may require (repeatable; the host gets no secret)")
	fs.Var(&g.binaries, "binary", "a binary `name` the capability may require (repeatable)")
	fs.Var(&g.networkHosts, "network-host", "a network `host` the capability may require (repeatable)")
	fs.BoolVar(&g.network, "network", false, "allow capabilities that require the network")
}

func (g *grantFlags) grants() port.Grants {
	return port.Grants{Credentials: g.credentials, Binaries: g.binaries, NetworkHosts: g.networkHosts, NetworkAllowed: g.network}
}

// registerEffects registers -effects, what happens to a new effect.
func registerEffects(fs *flag.FlagSet, mode *string) {
	fs.StringVar(mode, "effects", "refuse", "what happens to a new effect: refuse; accept (recorded as consumed with a synthetic receipt; nothing is done); uncertain (recorded unknown, to rehearse reconciliation)")
}

// dispatcherFor returns the Dispatcher of an -effects mode.
func dispatcherFor(e *env, mode string) (port.Dispatcher, error) {
	switch mode {
	case "refuse":
		return port.NoEffects{}, nil
	case "accept":
		return acceptEffects{e}, nil
	case "uncertain":
		return uncertainEffects{e}, nil
	}
	return nil, usagef("-effects must be refuse, accept or uncertain, not %q", mode)
}

// acceptEffects is -effects accept: every effect is recorded as consumed
// with a synthetic receipt; nothing is done.
type acceptEffects struct{ e *env }

func (a acceptEffects) Dispatch(_ context.Context, d port.Dispatch) (port.Receipt, error) {
	a.e.progress("effect %s (%s on %s) accepted without being performed: zeoctl holds no credentials",
		d.LogicalEffectID, d.Request.Operation, d.Request.ConnectionRef)
	return port.Receipt{ReceiptID: "zeoctl-accepted-" + d.AuthorizationID}, nil
}

// uncertainEffects is -effects uncertain: every new effect fails
// uncertainly, so it is recorded unknown.
type uncertainEffects struct{ e *env }

func (u uncertainEffects) Dispatch(_ context.Context, d port.Dispatch) (port.Receipt, error) {
	u.e.progress("effect %s: its dispatch is made uncertain (-effects uncertain); it will need 'zeoctl ledger resolve'", d.LogicalEffectID)
	return port.Receipt{}, errors.New("zeoctl: -effects uncertain: the outcome of this dispatch is unknown")
}
