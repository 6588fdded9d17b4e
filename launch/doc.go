// Package launch is the Runtime's trusted launcher for the ZEO runtime host
// (`zeo-capability`, protocol version 1): it builds the LaunchContext, starts
// the host with exactly the descriptors, environment and process group the
// protocol requires, supervises it to its deadline, and judges what it left
// behind (its one stdout line and exit status) with ParseResult.
package launch
