// Package cgroup places processes in cgroups of their own, under a
// delegated cgroup v2 directory, so that ending one ends every process it
// left behind, whatever session or process group they moved to
// (doc/design.md, “Containment”, “The cgroup layer”).
//
// A Parent is the directory under which this process may create cgroups:
// one given by the embedder, else this process's own cgroup v2 (from
// /proc/self/cgroup under the cgroup2 mount), checked writable and probed
// for cgroup.kill (Linux 5.14). A Group is one cgroup under it, made for
// one process: the process is started directly into it (clone3 with
// CLONE_INTO_CGROUP, through syscall.SysProcAttr.UseCgroupFD), so nothing
// it runs is ever outside it, or moves itself in with a descriptor of its
// cgroup.procs that the creator opened. Group.Close writes cgroup.kill
// (SIGKILL to every process in the cgroup), waits for cgroup.events to say
// "populated 0", and removes the directory.
//
// Limits are set in each Group before anything runs in it, and only where
// the Parent's cgroup.subtree_control enables the controller: a limit
// asked whose controller is not enabled is refused with a *LimitError
// (errors.Is ErrLimitUnavailable), unless Options.BestEffort drops it, and
// Parent.Dropped names it. The package never enables controllers itself:
// that is the delegation's owner's decision.
//
// The package works on Linux only; elsewhere Open returns ErrUnavailable.
package cgroup

import (
	"errors"
	"fmt"
)

// ErrUnavailable is wrapped by Open's refusal when no usable delegated
// cgroup v2 directory exists: no cgroup2 mount, a directory this process
// may not write, a kernel without cgroup.kill, or a system other than
// Linux. The message names which.
var ErrUnavailable = errors.New("cgroup: no usable delegated cgroup v2")

// ErrLimitUnavailable is matched (errors.Is) by every *LimitError.
var ErrLimitUnavailable = errors.New("cgroup: limit unavailable")

// Limits are the cgroup limits each Group gets. Zero leaves a limit unset
// (the Group then shares its parent's).
type Limits struct {
	// Pids is pids.max: the most processes and threads the cgroup holds
	// at once (controller pids). A fork beyond it fails with EAGAIN.
	Pids int64
	// MemoryBytes is memory.max (controller memory): beyond it the
	// kernel reclaims, then kills a process of the cgroup.
	MemoryBytes int64
	// SwapBytes is memory.swap.max (controller memory, with swap
	// accounting); negative sets it to 0: no swap at all.
	SwapBytes int64
	// CPUPercent is cpu.max as a share of one CPU (controller cpu): 150
	// lets the cgroup use 1.5 CPUs' time per 100 ms period.
	CPUPercent int
}

// Options configure Open.
type Options struct {
	// Parent is an existing cgroup v2 directory this process may create
	// cgroups under (delegated to its user). Empty means this process's
	// own cgroup.
	Parent string
	// Limits are set in every Group.
	Limits Limits
	// BestEffort drops a limit whose controller the Parent does not
	// enable (Parent.Dropped names it) instead of refusing with a
	// *LimitError.
	BestEffort bool
}

// validate checks o's values.
func (o Options) validate() error {
	l := o.Limits
	switch {
	case l.Pids < 0:
		return errors.New("cgroup: Limits.Pids is negative")
	case l.MemoryBytes < 0:
		return errors.New("cgroup: Limits.MemoryBytes is negative")
	case l.CPUPercent < 0:
		return errors.New("cgroup: Limits.CPUPercent is negative")
	}
	return nil
}

// LimitError is a limit asked whose controller the parent cgroup does not
// enable for its children.
type LimitError struct {
	// File is the limit's file (pids.max, memory.max, …).
	File string
	// Controller is the controller it needs.
	Controller string
	// Parent is the directory whose cgroup.subtree_control lacks it.
	Parent string
	// Available lists the controllers the parent's cgroup.controllers
	// offers (what its owner could enable).
	Available []string
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("cgroup: %s needs controller %q, which %s does not enable for its children (cgroup.subtree_control; available: %v): enable it there, or leave that limit unset",
		e.File, e.Controller, e.Parent, e.Available)
}

// Is makes every *LimitError match ErrLimitUnavailable.
func (e *LimitError) Is(target error) bool { return target == ErrLimitUnavailable }

// files are the limit files l sets, with their controllers and values;
// an unset limit has none.
func (l Limits) files() []limitFile {
	var out []limitFile
	if l.Pids > 0 {
		out = append(out, limitFile{"pids.max", "pids", fmt.Sprint(l.Pids)})
	}
	if l.MemoryBytes > 0 {
		out = append(out, limitFile{"memory.max", "memory", fmt.Sprint(l.MemoryBytes)})
	}
	switch {
	case l.SwapBytes > 0:
		out = append(out, limitFile{"memory.swap.max", "memory", fmt.Sprint(l.SwapBytes)})
	case l.SwapBytes < 0:
		out = append(out, limitFile{"memory.swap.max", "memory", "0"})
	}
	if l.CPUPercent > 0 {
		const period = 100000 // µs
		out = append(out, limitFile{"cpu.max", "cpu", fmt.Sprintf("%d %d", l.CPUPercent*period/100, period)})
	}
	return out
}

type limitFile struct{ file, controller, value string }

// Config is the embedder's option (see Option) in the form Resolve takes:
// the layer on by default where available.
type Config struct {
	// Off turns the layer off.
	Off bool
	// Required refuses where the layer is unavailable.
	Required bool
	// Options are the parent, the limits and BestEffort.
	Options
}

// Option is contain.Cgroup and process.Cgroup field for field (their
// docs differ, so each package keeps its own documented struct): both
// convert to it, which makes the embedder's option into a Config in one
// place, and a field added to one of them and not here stops the build.
type Option struct {
	Off              bool
	Parent           string
	Required         bool
	Pids             int64
	MemoryBytes      int64
	SwapBytes        int64
	CPUPercent       int
	BestEffortLimits bool
}

// Config is o in the form Resolve takes.
func (o Option) Config() Config {
	return Config{Off: o.Off, Required: o.Required, Options: Options{
		Parent: o.Parent, BestEffort: o.BestEffortLimits,
		Limits: Limits{Pids: o.Pids, MemoryBytes: o.MemoryBytes, SwapBytes: o.SwapBytes, CPUPercent: o.CPUPercent},
	}}
}

// Resolve returns the Parent c asks for; or nil and the reason the layer
// falls back (wrapping ErrUnavailable) when it is off or unavailable and
// not required; or a refusal: Required where it is unavailable (wrapping
// ErrUnavailable), limits asked without a cgroup or whose controller the
// parent does not enable (wrapping ErrLimitUnavailable), a contradiction.
func Resolve(c Config) (p *Parent, fallback, err error) {
	hasLimits := c.Limits != Limits{}
	if c.Off {
		if c.Required || hasLimits {
			return nil, nil, errors.New("cgroup: Off with Required or a limit set")
		}
		return nil, fmt.Errorf("%w: turned off", ErrUnavailable), nil
	}
	p, err = Open(c.Options)
	switch {
	case err == nil:
		return p, nil, nil
	case !errors.Is(err, ErrUnavailable):
		return nil, nil, err
	case c.Required:
		return nil, nil, fmt.Errorf("cgroup layer required: %w", err)
	case hasLimits && !c.BestEffort:
		return nil, nil, fmt.Errorf("%w: cgroup limits asked, and %w", ErrLimitUnavailable, err)
	}
	return nil, err, nil
}
