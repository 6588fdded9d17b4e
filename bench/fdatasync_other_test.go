//go:build !linux

package bench

import "os"

// fdatasync is fsync where Linux's fdatasync is missing, as bbolt does.
func fdatasync(f *os.File) error { return f.Sync() }
