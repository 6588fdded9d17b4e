// Package zeohost is a capability runtime backend that runs ZEO capability
// providers (doc/protocol.md) through the module's Supervisor (package
// supervise), so that a controller built on the capabilityruntime contract
// runs them beside its process and wasm runtimes, under the same
// supervision as every other ZEO operation: the ledger, fencing, the
// effect port's exactly-once, the Authority, bounded shutdown (see
// doc/capabilityruntime.md, “The zeohost backend”).
//
// Start with [New]: a [Config] holds the supervise.Config and the
// launch.Config its providers run with, and the [*Backend] it returns is
// registered in a capabilityruntime.Registry under [Kind].
//
// # An extension of the contract
//
// Its runtime kind (Kind, "zeohost") and its protocol (Protocol,
// "zeo/runtime-host-v1") are this module's extension of the
// capabilityruntime contract, which knows the kinds process and wasm and
// the protocols neuron/capability-runtime-v1 and -v1-json. A ZEO provider
// is not a capability runtime package: it comes as a provider binding and
// a provider environment whose digest the launcher verifies, not as a
// runtime.json with platform artifacts. So no manifest declares the kind
// (capabilityruntime.SupportedRuntimeKinds stays "process", "wasm", and
// Manifest.Validate refuses "zeohost"); an embedder registers this backend
// in its Registry under Kind and builds the BackendSpec itself.
//
// # Who decides what
//
// The Backend's Config is the embedder's Go code: the ledger, the
// Authority, the Dispatcher, the grants, the launcher's containment and
// verifier. A BackendSpec (data, possibly from a deployment record) says
// only which binding to run, from which interpreter, for which scope, with
// which effect budget: it can never choose a ledger, widen a grant or skip
// the Authority, which is asked before every launch and every new effect.
//
// # Starting
//
// Start admits one provider binding: BackendSpec.Entrypoint is the
// provider environment's interpreter (relative ones under RootDir), used
// with Config.Launch's arguments, environment and containment;
// BackendSpec.Config carries the binding (ConfigBinding), the scope
// (ConfigScope) and the call settings (ConfigEffectBudget, ConfigSeatID,
// ConfigRuntimeBindingID, ConfigReservationWaitMS); unknown keys are
// refused. Protocol is empty or Protocol; MaxWorkers, when positive,
// bounds the instance's concurrent Executes (0: no bound of its own). The
// binding is checked as the Supervisor and the host check it
// (manifest.ValidateBinding, supervise/port.CheckDocument, the hosts' python
// version), then the host's doctor runs on it (a real process); a refusal
// is ErrDoctor with the process evidence. Instances of one binding share
// one provider environment: another interpreter for a live binding is
// ErrSpecConflict.
//
// # Requests
//
// One Execute is one Supervisor.Invoke. Request.Params has
// ParamCapabilityID (required), ParamArguments (an object) and
// ParamOperationID; no other key. The operation id is the operation's
// durable identity: a retry with the same id continues the operation, so
// an effect already recorded is answered from the ledger and dispatched
// again never, and an accepted result is returned without launching
// (ResultReconnected). An empty one is Request.ExecutionID, else a fresh
// random id, returned as ResultOperationID.
//
// # Responses
//
// A succeeded outcome is a Response whose Result has ResultState
// "succeeded", ResultData (the accepted result's data, read from its
// artifact in the ledger), ResultArtifact, ResultEffects and the budget.
// Every other outcome is a controlled failure: Response.Error is the
// outcome's code (CodeRefused, CodeNeedsReconciliation, CodeCancelled,
// CodeRunning, ...; one per state, documented with what to do next), the
// Result still says what is known (ResultReason, ResultEffects), and the
// error is a *CallError wrapping the contract's
// *capabilityruntime.RuntimeError and the Supervisor's
// *supervise.OutcomeError. Failures before any outcome — params that say
// nothing runnable (ErrInvalidParams), a closed instance (ErrClosed), an
// unreachable ledger, an operation id reused for another request
// (supervise.ErrOperationMismatch) — are a nil Response and an error.
//
// # Health and Close
//
// Health runs the host's doctor again: it fails when the provider
// environment can no longer launch the binding. An instance's Close drains
// its calls within its context, then cancels them (their hosts are
// stopped, their outcomes recorded) and waits Config.CloseGrace for them.
// The Backend's Close is the Supervisor's: it drains every call within its
// bound, closes the starters and releases the controller's lease only when
// no write can still land.
package zeohost
