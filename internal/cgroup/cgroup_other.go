//go:build !linux

package cgroup

import (
	"context"
	"fmt"
	"os"
	"runtime"
)

// Parent is a delegated cgroup v2 directory; there is none on this system.
type Parent struct{}

// Open refuses: cgroups exist on Linux only.
func Open(o Options) (*Parent, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("%w: cgroups exist on Linux only, not on %s", ErrUnavailable, runtime.GOOS)
}

// Dir is empty.
func (p *Parent) Dir() string { return "" }

// Dropped is empty.
func (p *Parent) Dropped() []string { return nil }

// Limits is empty.
func (p *Parent) Limits() []string { return nil }

// New refuses.
func (p *Parent) New(prefix string) (*Group, error) { return nil, ErrUnavailable }

// Group is one cgroup; there is none on this system.
type Group struct{}

// Dir is empty.
func (g *Group) Dir() string { return "" }

// FD is -1.
func (g *Group) FD() int { return -1 }

// OpenProcs refuses.
func (g *Group) OpenProcs() (*os.File, error) { return nil, ErrUnavailable }

// Kill refuses.
func (g *Group) Kill() error { return ErrUnavailable }

// Populated refuses.
func (g *Group) Populated() (bool, error) { return false, ErrUnavailable }

// Procs refuses.
func (g *Group) Procs() ([]int, error) { return nil, ErrUnavailable }

// Close does nothing.
func (g *Group) Close(ctx context.Context) error { return nil }
