//go:build unix

// Package childproc holds the process primitives that the launchers of this
// module share: marking inherited descriptors close-on-exec before a child
// starts, so that it gets only the descriptors it is given, and waiting for
// a child's exit without reaping it, so that its process group can still be
// signalled while the group id is certainly its own.
package childproc
