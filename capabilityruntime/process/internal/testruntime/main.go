//go:build unix

// Command testruntime is the capability runtime the process backend's tests
// start: one program whose behaviour is chosen by the name it runs under,
// because a runtime gets no arguments and an allowlisted environment. Tests
// build it once and link it under each name; the behaviour is the name up to
// its first '.', so "echo.7" is an echo.
//
//	echo        a well-behaved runtime (both protocols): echoes its call and
//	            reports itself; params touch, sleep_ms, deaf, linger_ms,
//	            fail, crash, introspect, setsid_child (starts a grandchild
//	            in a session of its own, reported as setsid_pid)
//	stubborn    ignores SIGTERM, and blocks forever once its server stopped
//	crashstart  writes to stderr and exits 2 at once
//	neverready  never creates the ready file
//	wrongproto  answers Initialize with another protocol
//	unready     an echo whose Health answers not ready
//	garbage     (JSON) writes a line of text before its response
//	twodocs     (JSON) writes two responses
//	flood       (JSON) writes far more than any output limit
//	exit3       (JSON) writes a valid response, then exits 3
//	spawner     (JSON) starts a grandchild in its group, reports its pid on
//	            stderr, then sleeps
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/zeoruntime/runtimeipc/capabilityruntime/serve"
)

func main() {
	fds := startupFDs() // before anything else opens one
	name, _, _ := strings.Cut(filepath.Base(os.Args[0]), ".")
	ctx := context.Background()
	var init atomic.Pointer[serve.Init] // what Initialize received, reported by echo
	h := serve.Handler{
		Execute: func(ctx context.Context, c *serve.Call) (map[string]any, error) {
			out, err := echo(ctx, c, fds)
			if in := init.Load(); out != nil && in != nil {
				out["init"] = map[string]any{"protocol": in.Protocol, "metadata": in.Metadata}
			}
			return out, err
		},
		Initialize: func(_ context.Context, in *serve.Init) (*serve.InitResult, error) {
			init.Store(in)
			return &serve.InitResult{Features: []string{"concurrent"}}, nil
		},
	}
	switch name {
	case "echo":
	case "stubborn":
		signal.Ignore(syscall.SIGTERM)
		h.Execute = func(_ context.Context, c *serve.Call) (map[string]any, error) {
			touch(c)
			time.Sleep(time.Duration(number(c.Params["sleep_ms"])) * time.Millisecond) // ignores cancellation
			return map[string]any{"pid": os.Getpid()}, nil
		}
		err := serve.Serve(ctx, h)
		fmt.Fprintln(os.Stderr, "stubborn: server stopped:", err, "; staying alive")
		sleepForever()
	case "crashstart":
		fmt.Fprintln(os.Stderr, "crashstart: cannot start: missing credentials")
		os.Exit(2)
	case "neverready":
		sleepForever()
	case "unready":
		h.Health = func(context.Context) error { return errors.New("warming up") }
	case "wrongproto":
		h.Initialize = func(context.Context, *serve.Init) (*serve.InitResult, error) {
			return &serve.InitResult{Protocol: "neuron/capability-runtime-v0"}, nil
		}
	case "garbage":
		fmt.Println("starting up...")
	case "twodocs":
		fmt.Println(`{"result":{}}`)
	case "flood":
		line := strings.Repeat("x", 1<<16)
		for range 1 << 10 {
			fmt.Println(line)
		}
		return
	case "exit3":
		if err := serve.Serve(ctx, h); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
		os.Exit(3)
	case "spawner":
		cmd := exec.Command("sleep", "1000")
		if err := cmd.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "spawner:", err)
			os.Exit(1)
		}
		fmt.Fprintf(os.Stderr, "grandchild %d\n", cmd.Process.Pid)
		sleepForever()
	default:
		fmt.Fprintf(os.Stderr, "testruntime: unknown behaviour %q\n", name)
		os.Exit(1)
	}
	if err := serve.Serve(ctx, h); err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		os.Exit(1)
	}
}

// echo reports the call back, and the process itself when asked.
func echo(ctx context.Context, c *serve.Call, fds []string) (map[string]any, error) {
	touch(c)
	if ms := number(c.Params["sleep_ms"]); ms > 0 && c.Params["deaf"] == true {
		time.Sleep(time.Duration(ms) * time.Millisecond) // deaf: ignores its deadline and cancellation
	} else if ms > 0 {
		t := time.NewTimer(time.Duration(ms) * time.Millisecond)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			// linger_ms: finish slowly once cancelled, which holds up a
			// graceful stop of the worker.
			time.Sleep(time.Duration(number(c.Params["linger_ms"])) * time.Millisecond)
			return nil, ctx.Err()
		}
	}
	if msg, ok := c.Params["fail"].(string); ok {
		return map[string]any{"partial": true}, errors.New(msg)
	}
	if c.Params["crash"] == true {
		os.Exit(3)
	}
	var setsidPID int
	if c.Params["setsid_child"] == true {
		gc := exec.Command("sleep", "1000")
		gc.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := gc.Start(); err != nil {
			return nil, fmt.Errorf("setsid_child: %w", err)
		}
		setsidPID = gc.Process.Pid
		_ = gc.Process.Release()
	}
	deadline := -1.0
	if d, ok := ctx.Deadline(); ok {
		deadline = float64(time.Until(d).Milliseconds())
	}
	out := map[string]any{
		"params":         c.Params,
		"pid":            os.Getpid(),
		"type":           c.Type,
		"version":        c.Version,
		"execution_id":   c.ExecutionID,
		"correlation_id": c.CorrelationID,
		"deadline_ms":    deadline,
	}
	if setsidPID != 0 {
		out["setsid_pid"] = setsidPID
	}
	if c.Params["introspect"] == true {
		env := os.Environ()
		slices.Sort(env)
		cwd, _ := os.Getwd()
		pgid, _ := syscall.Getpgid(0)
		out["env"] = env
		out["fds"] = fds
		out["cwd"] = cwd
		out["pgid"] = pgid
	}
	return out, nil
}

// touch marks the call's arrival with the file named by the param touch in
// the working directory, for tests that must act once a call is running.
func touch(c *serve.Call) {
	if name, ok := c.Params["touch"].(string); ok {
		if err := os.WriteFile(name, nil, 0o600); err != nil {
			fmt.Fprintln(os.Stderr, "touch:", err)
		}
	}
}

// sleepForever blocks without looking deadlocked to the Go runtime (a bare
// select{} with no other goroutine is a fatal error).
func sleepForever() {
	for {
		time.Sleep(time.Hour)
	}
}

func number(v any) float64 {
	f, _ := v.(float64)
	return f
}

// startupFDs lists the descriptors open when main began, with what each one
// is, using raw system calls so that listing opens nothing that stays.
func startupFDs() []string {
	dir := "/proc/self/fd"
	d, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return []string{"error: " + err.Error()}
	}
	defer syscall.Close(d)
	var names []string
	buf := make([]byte, 8192)
	for {
		n, err := syscall.ReadDirent(d, buf)
		if err != nil || n <= 0 {
			break
		}
		_, _, names = syscall.ParseDirent(buf[:n], -1, names)
	}
	var out []string
	for _, n := range names {
		fd, err := strconv.Atoi(n)
		if err != nil || fd == d {
			continue
		}
		target, _ := os.Readlink(filepath.Join(dir, n))
		out = append(out, n+" "+target)
	}
	slices.SortFunc(out, func(a, b string) int {
		x, _ := strconv.Atoi(strings.Fields(a)[0])
		y, _ := strconv.Atoi(strings.Fields(b)[0])
		return x - y
	})
	return out
}
