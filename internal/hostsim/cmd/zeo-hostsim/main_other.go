//go:build !linux

package main

import "os"

// The simulated host reads /proc and Linux socket options; elsewhere it
// only reports protocol_error's exit status.
func main() { os.Exit(8) }
