//go:build linux

package hostproc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/internal/testkit/hostsim"
)

// maxBytes is the host's MAX_BYTES: the limit on the context, the binding,
// stdin and the stdout line.
const maxBytes = 1 << 20

// Main runs the simulated host with the command line args (the arguments
// after the program name, or after the marker that selected the host mode)
// and returns the process's exit code, which the caller passes to os.Exit.
//
// Main takes the process over as the host does: it reads FD 3 and stdin,
// points FDs 1 and 2 at /dev/null before any IPC and writes its one result
// line on a saved copy of stdout. Call it first in main, before anything
// else writes to stdout or starts goroutines that might. The grandchild a
// scenario starts re-executes os.Executable() with the arguments of os.Args
// that precede args, so a marker argument carries over.
func Main(args []string) int {
	name := os.Getenv(EnvScenario)
	sc := scenario(name)
	// Before anything opens a descriptor: what did we inherit?
	var startFDs map[string]string
	if sc == scReport {
		startFDs = listFDs()
	}
	if sc == scSleeper {
		sleeper()
	}
	machine, err := unix.FcntlInt(1, unix.F_DUPFD_CLOEXEC, 3)
	if err != nil {
		return 8
	}
	h := &host{machine: machine, sc: sc, startFDs: startFDs, marker: markerArgs(os.Args, args)}
	var code int
	if !sc.known() {
		// Said on stderr, which the launcher keeps a tail of: a typo in a
		// test's environment must not pass for a well-behaved host.
		fmt.Fprintf(os.Stderr, "zeo-hostsim: unknown %s %q; known: %s\n", EnvScenario, name,
			strings.Join(scenarioNames(), ", "))
		code = h.emit(hostsim.ProtocolErrorResult())
	} else {
		code = h.main(args)
	}
	unix.Close(machine)
	if h.writeErr != nil {
		return 1 // as Python would on a closed stdout: not a protocol code
	}
	return code
}

// markerArgs returns the arguments of osArgs between the program name and
// args, when args is their suffix.
func markerArgs(osArgs, args []string) []string {
	if len(osArgs) == 0 || len(args) > len(osArgs)-1 {
		return nil
	}
	k := len(osArgs) - len(args)
	for i, a := range args {
		if osArgs[k+i] != a {
			return nil
		}
	}
	return osArgs[1:k]
}

// host is one process run.
type host struct {
	machine  int // the saved stdout
	sc       scenario
	startFDs map[string]string
	marker   []string // os.Args between the program name and the host's arguments
	writeErr error    // the first failed write on machine; later writes are skipped
}

// emit writes one canonical line on the machine descriptor and returns the
// exit code for it. Output over 1 MiB is replaced by protocol_error.
func (h *host) emit(r hostsim.Result) int {
	line, err := r.Line()
	if err != nil || len(line) > maxBytes {
		r = hostsim.ProtocolErrorResult()
		line, _ = r.Line()
	}
	h.write(line)
	return r.ExitCode()
}

func (h *host) emitJSON(v any) int {
	b, err := canon.Marshal(v)
	if err != nil || len(b)+1 > maxBytes {
		return h.emit(hostsim.ProtocolErrorResult())
	}
	h.write(append(b, '\n'))
	return 0
}

func (h *host) write(b []byte) {
	for len(b) > 0 && h.writeErr == nil {
		n, err := unix.Write(h.machine, b)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			h.writeErr = err
			return
		}
		b = b[n:]
	}
}

func invalidRequest() hostsim.Result {
	code := hostsim.CodeInvalidRequest
	return hostsim.Result{ArtifactRefs: []string{}, EffectDisposition: hostsim.DispositionNone, ErrorCode: &code,
		ProtocolVersion: 1, State: hostsim.StateInvalidRequest}
}

func (h *host) main(argv []string) int {
	a, err := parseArgs(argv)
	if err != nil {
		return h.emit(invalidRequest())
	}
	switch a.command {
	case "invoke":
		return h.invoke(a)
	case "describe", "doctor", "capabilities":
		return h.discover(a)
	}
	return h.emit(invalidRequest())
}

// readFD reads descriptor fd to EOF through a dup, from its current offset,
// keeping at most maxBytes+1 bytes, as the host does.
func readFD(fd int) ([]byte, error) {
	d, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 3)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(d), "fd"+strconv.Itoa(fd))
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxBytes {
		return nil, errors.New("input over 1 MiB")
	}
	return b, nil
}

// checkSocket checks that fd is a connected AF_UNIX stream socket.
func checkSocket(fd int) error {
	dom, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_DOMAIN)
	if err != nil {
		return err
	}
	typ, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TYPE)
	if err != nil {
		return err
	}
	if dom != unix.AF_UNIX || typ != unix.SOCK_STREAM {
		return fmt.Errorf("fd %d is not an AF_UNIX stream socket", fd)
	}
	if _, err := unix.Getpeername(fd); err != nil {
		return fmt.Errorf("fd %d is not connected: %w", fd, err)
	}
	return nil
}

// silence points FDs 1 and 2 at /dev/null (doc/protocol.md,
// “Output discipline”).
func silence() error {
	null, err := unix.Open("/dev/null", unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(null)
	if err := unix.Dup2(null, 1); err != nil {
		return err
	}
	return unix.Dup2(null, 2)
}

func (h *host) invoke(a args) int {
	if a.contextFD < 3 || a.runtimeFD < 3 || a.runtimeFD == a.contextFD {
		return h.emit(hostsim.ProtocolErrorResult())
	}
	raw, err := readFD(a.contextFD)
	if err != nil {
		return h.emit(hostsim.ProtocolErrorResult())
	}
	lc, err := parseContext(raw)
	if err != nil {
		return h.emit(hostsim.ProtocolErrorResult())
	}
	stdin, _ := io.ReadAll(io.LimitReader(os.Stdin, maxBytes+1))
	bound := lc.Attempt
	req, reqErr := parseRequest(stdin)
	if err := checkSocket(a.runtimeFD); err != nil {
		return h.emit(hostsim.ProtocolErrorResult())
	}
	if reqErr != nil {
		r := invalidRequest()
		r.Binding = &bound
		return h.emit(r)
	}
	switch h.sc {
	case scClaimAtOnce:
		return h.emit(claim(hostsim.Result{Binding: &bound, ProtocolVersion: 1}, os.Getenv(EnvClaim)))
	case scReport:
		return h.emitJSON(h.report(raw, stdin, a.runtimeFD))
	case scProbe:
		r := h.report(raw, stdin, a.runtimeFD)
		r["probe"] = probeParent(a.runtimeFD)
		return h.emitJSON(r)
	case scHostile:
		return h.emitJSON(map[string]any{"actions": hostile(os.Getenv(EnvHostile))})
	}
	if err := silence(); err != nil {
		return h.emit(hostsim.ProtocolErrorResult())
	}
	conn, err := socketConn(a.runtimeFD)
	if err != nil {
		return h.emit(hostsim.ProtocolErrorResult())
	}
	if code, done := h.beforeIPC(conn); done {
		return code
	}
	inv := newInvocation(lc, req)
	if h.sc == scHangBeforePublish {
		hangBeforePublish(inv)
	}
	rep := inv.Run(context.Background(), conn)
	return h.finish(rep.Result)
}

// finish writes the result, applying the output misbehaviours.
func (h *host) finish(r hostsim.Result) int {
	line, err := r.Line()
	if err != nil || len(line) > maxBytes {
		return h.emit(hostsim.ProtocolErrorResult())
	}
	if (h.sc == scClaimSuccess || h.sc == scClaim) && r.Binding != nil {
		state := hostsim.StateSucceeded
		if h.sc == scClaim {
			state = os.Getenv(EnvClaim)
		}
		r = claim(r, state)
		if line, err = r.Line(); err != nil {
			return h.emit(hostsim.ProtocolErrorResult())
		}
	}
	switch h.sc {
	case scTwoLines:
		h.write(line)
		h.write(line)
		return r.ExitCode()
	case scBigStdout:
		h.write(line)
		h.write(bytes.Repeat([]byte("x"), maxBytes))
		return r.ExitCode()
	case scWrongExit:
		h.write(line)
		if r.ExitCode() == 0 {
			return 3
		}
		return 0
	case scGrandchildEscape:
		h.write(line)
		if err := spawnSleeper(h.machine, h.marker, true); err != nil {
			return 1
		}
		return r.ExitCode()
	}
	h.write(line)
	return r.ExitCode()
}

// parseRequest decodes the InvocationRequest strictly.
func parseRequest(b []byte) (request, error) {
	var r request
	if len(b) == 0 || len(b) > maxBytes {
		return r, errors.New("stdin empty or over 1 MiB")
	}
	if err := canon.Unmarshal(b, &r); err != nil {
		return r, err
	}
	if r.ProtocolVersion != 1 || !validIdentifier(r.CapabilityID) {
		return r, errors.New("invalid InvocationRequest")
	}
	if r.Arguments == nil {
		return r, errors.New("arguments is not an object")
	}
	return r, nil
}

// request is the InvocationRequest (doc/protocol.md, “Invocation request”).
type request struct {
	ProtocolVersion int            `json:"protocol_version"`
	CapabilityID    string         `json:"capability_id"`
	Arguments       map[string]any `json:"arguments"`
}

func validIdentifier(s string) bool {
	n := len([]rune(s))
	return n >= 1 && n <= 256
}

// claim returns r claiming state, with the error code (EnvClaimCode when
// set), effect disposition and artifact refs an honest host writes with
// that state.
func claim(r hostsim.Result, state string) hostsim.Result {
	codes := map[string]string{
		hostsim.StateRefused: hostsim.CodeRefused, hostsim.StateFailed: "ZEO_CAP_UNEXPECTED",
		hostsim.StateUnavailable: hostsim.CodeCapabilityFailed, hostsim.StateTimedOut: hostsim.CodeDeadline,
		hostsim.StateInvalidRequest: hostsim.CodeInvalidRequest, hostsim.StateProtocolError: hostsim.CodeProtocol,
	}
	r.State, r.ErrorCode, r.EffectDisposition, r.ArtifactRefs = state, nil, hostsim.DispositionNone, []string{}
	if c, ok := codes[state]; ok {
		r.ErrorCode = &c
	}
	if c := os.Getenv(EnvClaimCode); c != "" {
		r.ErrorCode = &c
	}
	switch state {
	case hostsim.StateSucceeded:
		r.ArtifactRefs = []string{"artifact-forged"}
	case hostsim.StateNeedsReconciliation:
		r.EffectDisposition = hostsim.DispositionUnknown
	}
	return r
}
