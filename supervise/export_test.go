package supervise

import "github.com/zeoruntime/runtimeipc/supervise/internal/telemetry"

// Clip is clip, for the black-box tests.
var Clip = clip

// The log attribute keys, for the black-box tests that read log records.
const (
	KeyOperation  = telemetry.KeyOperation
	KeyAttempt    = telemetry.KeyAttempt
	KeyController = telemetry.KeyController
)
