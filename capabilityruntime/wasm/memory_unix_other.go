//go:build unix && !linux

package wasm

// mapNoReserve is Linux's; elsewhere an anonymous mapping reserves nothing
// until touched anyway.
const mapNoReserve = 0
