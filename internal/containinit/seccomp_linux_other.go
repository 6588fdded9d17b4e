//go:build linux && !amd64 && !arm64

package containinit

const (
	seccompAuditArch = 0 // SeccompUsable reports the layer unavailable
	seccompX32Bit    = 0
)

var seccompNumbers = map[string]uint32{}
