package cgroup

import (
	"context"
	"os/exec"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// BenchmarkGroup measures what a Group adds to one short process (/bin/true),
// its modes interleaved in every iteration: bare (no cgroup), clone3 (New,
// started into it, Close), moved (New, started outside, moved in by a
// write to cgroup.procs as a warm child moves itself, Close). It reports
// each mode's p50 in µs.
//
//	go test -run '^$' -bench Group -benchtime 200x ./internal/cgroup/
func BenchmarkGroup(b *testing.B) {
	p, err := Open(Options{})
	if err != nil {
		b.Skip(err)
	}
	run := func(g *Group, into bool) {
		cmd := exec.Command("/bin/sleep", "0.001")
		if into {
			cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: g.FD()}
		}
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		if g != nil && !into {
			f, err := g.OpenProcs()
			if err != nil {
				b.Fatal(err)
			}
			if _, err := f.WriteString(strconv.Itoa(cmd.Process.Pid)); err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
		_ = cmd.Wait()
		if g != nil {
			if err := g.Close(context.Background()); err != nil {
				b.Fatal(err)
			}
		}
	}
	modes := []string{"bare", "clone3", "moved"}
	times := map[string][]time.Duration{}
	for range b.N {
		for _, m := range modes {
			start := time.Now()
			var g *Group
			if m != "bare" {
				if g, err = p.New("zeo-bench"); err != nil {
					b.Fatal(err)
				}
			}
			run(g, m == "clone3")
			times[m] = append(times[m], time.Since(start))
		}
	}
	for _, m := range modes {
		ds := times[m]
		slices.Sort(ds)
		b.ReportMetric(float64(ds[len(ds)/2].Microseconds()), m+"-us")
	}
}
