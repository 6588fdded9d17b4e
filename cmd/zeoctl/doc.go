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
// # Exit status
//
//	0  the command did what was asked
//	1  it failed; the message after "zeoctl: <command>:" says what was wrong
//	   and what to do
//	2  the command line is wrong; the usage line follows the message
//	3  the command ran an operation whose outcome is not a success; the
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
