package supervise

// Clip is clip, for the black-box tests.
var Clip = clip

// The log attribute keys, for the black-box tests that read log records.
const (
	KeyOperation  = keyOperation
	KeyAttempt    = keyAttempt
	KeyController = keyController
)
