//go:build linux && !amd64 && !arm64

package launch

const (
	seccompAuditArch = 0 // seccompUsable reports the layer unavailable
	seccompX32Bit    = 0
)

var seccompNumbers = map[string]uint32{}
