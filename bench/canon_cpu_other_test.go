//go:build !unix

package bench

import "time"

// processCPU is not measured on this platform.
func processCPU() time.Duration { return 0 }

// childrenCPU is not measured here.
func childrenCPU() time.Duration { return 0 }

// voluntarySwitches is not counted here.
func voluntarySwitches() int64 { return 0 }

// threadCPU is not measured here.
func threadCPU() time.Duration { return 0 }
