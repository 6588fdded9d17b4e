// Zeoctl is the operator's command line for runtimeipc: it runs ZEO
// capability providers under a ledger-backed Runtime, asks a provider's
// host what it serves, and inspects and settles what the ledger holds.
//
// Usage:
//
//	zeoctl <command> [flags] [arguments]
//
// Every command has -h. 'zeoctl help' lists the commands, 'zeoctl help
// <command>' prints one's manual.
//
// # Start here
//
//	go run ./cmd/zeoctl demo
//
// runs capability operations end to end on the simulated host and a bolt
// ledger in a temporary directory, and prints the trace: the launch, each
// IPC request and the state it was answered, the ledger's evidence (fence,
// bootstrap redemption, each effect with its authorization and receipt,
// the budget left), the result and its artifact; then a redelivery after a
// host it loses on purpose (same logical effects, same receipts, no second
// dispatch), a lost-result reconnect (the accepted result, nothing
// launched), an Authority that refuses one effect and holds another until
// approved, and an uncertain effect settled as 'zeoctl ledger resolve'
// does and redelivered. Its receipts come from a stand-in dispatcher;
// examples/quickstart is the code of such a controller. Every line fits in
// 100 columns (-v prints ids and digests in full). It needs nothing but
// Go. With -ledger PATH the ledger is kept for the ledger and artifact
// commands.
//
// Wherever a command takes -ledger PATH, PATH may also be a PostgreSQL DSN
// (postgres://user@host:5432/db?sslmode=disable): the ledger that several
// controllers share (package ledger/postgres), in the schema the DSN's
// ledger_schema parameter names (default zeo_ledger), created on first use.
//
// # Scope
//
// -org and -project name the organization and project whose records a
// command reads or writes. One rule holds in every command: they default
// to org-local and project-local, the scope invoke and run record their
// operations in when none is given, and giving one changes only that
// half. A listing across the ledger (ledger operations without
// -operation, ledger effects -unknown and -in-flight, catalogue list)
// covers every scope unless -org or -project keeps one. 'zeoctl help
// scope' says the same.
//
// # Running a capability
//
//	zeoctl invoke -python PATH -binding FILE -capability ID -args JSON|@FILE
//	              [-ledger PATH] [-org ID] [-project ID] [-operation ID] [-deadline D] [-budget N]
//	              [-services LIST] [-effects refuse|accept|uncertain] [-warm] [-json]
//
// runs one capability operation with package supervise on a real provider
// (or -simulated) and prints the host's HostResult (evidence) and the
// Runtime's outcome, with what to do next when it is not a success. With
// -ledger the operation is durable: invoke again with the same -operation
// to continue it; an accepted result is returned without launching.
// zeoctl performs no effects: by default they are refused; -effects accept
// records each as consumed with a synthetic receipt, -effects uncertain as
// unknown (to rehearse reconciliation). -warm (with -python) forks the
// host from a zygote, a fork server that preloaded the host's own import
// closure (discovered from its source), instead of starting it cold
// (package launch, “Warm launch”); zeoctl demo always starts its hosts
// cold.
//
// # Choosing the host
//
// Every command that starts a host takes exactly one of:
//
//	-python PATH   the provider environment's interpreter, run as
//	               'PATH -m zeo_core.adapters.runtime_host'
//	-host PATH     the provider environment's zeo-capability script
//	-simulated     zeoctl's built-in simulated host (no Python)
//
// and -binding FILE, the provider binding (JSON; testdata/examples/binding.json
// is one). With -simulated the binding defaults to the simulated provider's.
// The host's environment is empty except for what -env KEY=VALUE adds, and
// with -env-root DIR the binding's environment_digest is checked against
// that directory tree before every launch.
//
// Every host is contained (package launch, “Containment”; doc/design.md,
// “Containment”): Landlock lets it read only its interpreter, its
// environment, the system directories and what -read PATH adds, and
// write only its working directory; it has no network, unless -network
// grants it to a capability that requires it, and then it reaches only
// the hosts its manifest names and -network-host grants, through the
// launcher's egress proxy (such a host is launched cold); it runs under
// resource limits, no_new_privs and a seccomp deny list, cold or warm. zeoctl prints one line naming the
// containment in force, and a warning when it runs as root (the host then
// runs as root too). -user NAME (or UID[:GID]) runs the host as another
// user, refused before launch, naming the path, when that user could not
// execute the host or enter a directory on the way to it. -uncontained
// turns every layer off; on a kernel that lacks a layer zeoctl refuses to
// launch and says so.
//
// # Static discovery
//
//	zeoctl describe              the host's describe: is the binding statically valid
//	zeoctl doctor                every check that must pass before a capability can
//	                             run (binding, interpreter version, installed
//	                             distribution, environment digest, the host's doctor),
//	                             each failure with what to fix
//	zeoctl capabilities list     one page of the inventory, as the host serves it
//	zeoctl capabilities describe ID
//	                             one capability's manifest
//
// Discovery never imports the provider's factory; zeoctl checks that the
// host's answer agrees with the binding.
//
// # The ledger
//
//	zeoctl ledger operations -ledger PATH [-org ID] [-project ID] [-state S]
//	                             the operations, or with -operation ID one in
//	                             full, with the evidence each attempt left
//	zeoctl ledger effects -ledger PATH -unknown
//	                             every effect that needs reconciliation
//	zeoctl ledger effects -ledger PATH -operation ID [-org ID] [-project ID]
//	                             an operation's effects
//	zeoctl ledger resolve -ledger PATH [-org ID] [-project ID] -operation ID
//	              -effect ID (-confirmed RECEIPT | -not-consumed REASON)
//	                             settle an effect whose dispatch is uncertain
//	                             (invoke and ledger effects -unknown print the
//	                             exact command)
//	zeoctl artifact get -ledger PATH [-org ID] [-project ID] REF
//	                             an accepted result's artifact, only within
//	                             its organization and project
//	zeoctl ledger upgrade -ledger PATH
//	                             upgrade a bolt file of an earlier format in
//	                             place, and check every record
//
// The ledger file is owned by one process at a time (its lock): a command
// on a ledger a controller holds says so, with the holder's pid, and exits
// 1. ledger operations, ledger effects and artifact get open a bolt file
// read-only, under a shared lock: several of them can read one file at
// once, even one the user cannot write, but not beside a running
// controller (use a PostgreSQL ledger for that). Every record they read is
// checked; a damaged one is reported as corrupt, never shown.
//
// # The catalogue and the agent facade
//
//	zeoctl catalogue admit -ledger PATH (-python PATH | -host PATH | -simulated)
//	              [-binding FILE] [-generation N] -audience ORG[/PROJECT]...
//	              [-only ID=ORG[/PROJECT],...]...
//	                             admit a provider generation once the host's own
//	                             discovery agrees with the binding; -audience says
//	                             who may see and run its capabilities
//	zeoctl catalogue list -ledger PATH [-org ID] [-project ID]
//	                             the providers' current generations, or what one
//	                             project sees and has consented to
//	zeoctl catalogue generations -ledger PATH [-distribution D -factory F]
//	zeoctl catalogue consent grant|revoke -ledger PATH [-org ID] [-project ID]
//	              -account NAME [-capability ID]... [-credential NAME]...
//	              [-service NAME]... [-effect-kind KIND]... [-effect-operation OP]...
//	zeoctl search -ledger PATH [-org ID] [-project ID] [-limit N] [-cursor C] [WORD...]
//	zeoctl describe-capability -ledger PATH [-org ID] [-project ID] ID
//	zeoctl run (-python PATH | -host PATH | -simulated) -ledger PATH [-org ID]
//	              [-project ID] [-args JSON|@FILE] [-operation ID] [-account NAME] ID
//	zeoctl mcp (-python PATH | -host PATH | -simulated) -ledger PATH [-org ID]
//	              [-project ID]
//	                             the agent facade as an MCP server on stdin and
//	                             stdout: exactly three tools, search, describe and
//	                             run, with capability ids as arguments
//
// search, describe-capability, run and mcp answer as the project sees the
// catalogue: a capability outside its audience does not exist for them,
// not even in an error's wording.
//
// # Telemetry
//
// demo, invoke, run and mcp take -telemetry stdout|stderr|otlp: the
// Supervisor's OpenTelemetry spans (one per invocation, attempt, IPC
// method, ledger write and dispatch) and its zeo.runtime.* metrics
// (doc/design.md, “Telemetry”). stdout and stderr get one JSON object per
// span as it ends and the metrics when the command ends (mcp, whose
// standard output is its protocol, refuses stdout); otlp sends them to
// the endpoint the standard OTEL_EXPORTER_OTLP_* variables name
// (http/protobuf, or grpc with OTEL_EXPORTER_OTLP_PROTOCOL=grpc), with
// service.name zeoctl unless OTEL_SERVICE_NAME says otherwise.
//
// # Exit status
//
//	0  the command did what was asked
//	1  it failed; the message after "zeoctl: <command>:" says what was wrong
//	   and what to do
//	2  the command line is wrong; the usage line follows the message
//	3  invoke or run ran an operation whose outcome is not a success; the
//	   outcome is printed and its state says what to do next
//
// # Hidden host mode
//
// 'zeoctl __host <host arguments>' makes zeoctl the simulated ZEO runtime
// host. zeoctl starts itself this way for -simulated, so that no build step
// and no Python are needed. The mode is internal: not a stable interface,
// and never a real provider. 'zeoctl help host' prints the simulated host's
// command line and settings (the ZEO_HOSTSIM_* environment variables and
// its scenarios), which -env passes to it.
package main
