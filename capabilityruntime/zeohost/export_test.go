package zeohost

import "github.com/zeoruntime/runtimeipc/capabilityruntime"

// Closing reports whether Close has begun on an instance of this package.
func Closing(bi capabilityruntime.BackendInstance) bool {
	in := bi.(*instance)
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.closed
}

// BackendClosing reports whether Close has begun on b.
func BackendClosing(b *Backend) bool { return b.isClosed() }
