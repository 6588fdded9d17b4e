//go:build !linux

package containinit

// Main does nothing: containment is Linux's.
func Main() {}
