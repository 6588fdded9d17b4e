// Package handler is the lower layer of package supervise, for a team
// with its own controller loop: everything one attempt needs besides the
// ledger (package ledger) and the launcher (package launch).
//
//   - BuildContext, from a ContextSpec, builds the attempt's
//     launch.LaunchContext: budget left, deadline, and what the manifest
//     requires within the port.Grants;
//   - CheckRequirements refuses before launch what the host would refuse
//     (and port.CheckDocument a document it would not parse);
//   - New returns the Handler, the ipc.Handler of the attempt,
//     backed by a ledger.Ledger and the embedder's ports (package
//     supervise/port); its documentation gives how each ledger answer
//     maps to the reply state the host receives;
//   - BindingOf rebuilds an attempt's wire binding from its evidence.
//
// A supervise.Supervisor does all of this, and more (leases, takeover,
// starters, judging the host's result); examples/ownloop shows the loop a
// team writes instead, step by step.
package handler
