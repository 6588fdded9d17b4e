//go:build linux

package hostproc

// Test hooks.
var (
	MarkerArgs    = markerArgs
	ScenarioNames = scenarioNames
)
