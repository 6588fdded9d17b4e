package capabilityruntime

import "runtime"

// HostPlatform returns the platform key of the running host, GOOS-GOARCH with
// Go's names ("linux-amd64", "darwin-arm64"). It is never PlatformWasm.
func HostPlatform() string {
	return runtime.GOOS + "-" + runtime.GOARCH
}

// PlatformForRuntime returns the platforms-map key under which an artifact of
// the given runtime kind is selected: PlatformWasm for exactly "wasm", and
// HostPlatform for every other value, empty and unknown kinds included,
// because a native artifact always runs on the host that runs the backend.
// The comparison is exact ("WASM" is not a kind; Validate refuses it).
func PlatformForRuntime(runtimeType string) string {
	if runtimeType == RuntimeKindWasm {
		return PlatformWasm
	}
	return HostPlatform()
}
