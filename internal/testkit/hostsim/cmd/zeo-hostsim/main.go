// Command zeo-hostsim is the simulated ZEO runtime host as its own
// executable: the command line, descriptors, stdout envelope and exit codes
// of upstream's `zeo-capability`, driving internal/testkit/hostsim's scripted
// providers. It exists so that the launcher and the supervisor can be
// tested with real processes; it is never a real provider. Its settings
// (the ZEO_HOSTSIM_* environment variables and the scenarios) are
// documented in package internal/testkit/hostsim/hostproc.
package main

import (
	"os"

	"github.com/zeoruntime/runtimeipc/internal/testkit/hostsim/hostproc"
)

func main() { os.Exit(hostproc.Main(os.Args[1:])) }
