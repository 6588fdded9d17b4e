package wasm

import "syscall"

// mapNoReserve keeps a reservation out of the commit charge on Linux.
const mapNoReserve = syscall.MAP_NORESERVE
