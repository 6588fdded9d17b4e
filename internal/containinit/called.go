package containinit

import "sync/atomic"

// called records that this program's main called Main (through
// contain.Init), so that it is safe to re-execute it as a containment
// init. It is the package's one piece of process-wide state, and must
// be: it describes the program (what its main does first), not any
// Launcher, and only Main sets it.
var called atomic.Bool

// Called reports whether this program has called Main.
func Called() bool { return called.Load() }
