package launch

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/zeoruntime/runtimeipc/manifest"
)

// writeProgram writes the server program into the private directory dir
// and returns the script to run and every file written. A provider-warm
// server is provwarm.py, with zygote.py beside it as the module it
// imports.
func (z *Zygote) writeProgram(dir string) (string, []string, error) {
	files := []struct {
		name string
		src  []byte
	}{{"zygote.py", z.source}}
	if z.spec.pw != nil {
		files = []struct {
			name string
			src  []byte
		}{{"provwarm.py", z.pwSource}, {"_zeo_zygote.py", z.source}}
	}
	var written []string
	for _, f := range files {
		p := filepath.Join(dir, f.name)
		if err := os.WriteFile(p, f.src, 0o400); err != nil {
			return "", written, err
		}
		written = append(written, p)
	}
	return written[0], written, nil
}

// sendProviderConfig sends a provider-warm server its configuration: the
// host module, the host versions it may recognise, and binding b's JSON
// as a sealed memfd (a binding can be larger than a control message).
func (z *Zygote) sendProviderConfig(s *zserver, b manifest.ProviderBinding) error {
	raw, err := json.Marshal(b)
	if err != nil {
		return fmt.Errorf("encoding the binding: %w", err)
	}
	f, err := sealedFile("zeo-provwarm-binding", raw)
	if err != nil {
		return err
	}
	defer f.Close()
	pins := make([]map[string]any, len(z.spec.pw.cfg.Hosts))
	for i, h := range z.spec.pw.cfg.Hosts {
		pins[i] = map[string]any{"name": h.Name, "files": h.Files}
	}
	return s.send(map[string]any{"op": "config", "module": z.spec.module, "pins": pins, "spare": z.spec.cfg.Spare}, []*os.File{f})
}

// providerWarmReady is what a provider-warm server's ready message says.
func providerWarmReady(m zmsg) *ProviderWarmStats {
	st := &ProviderWarmStats{Host: m.Host, Phases: map[string]time.Duration{}}
	for k, ms := range m.Phases {
		st.Phases[k] = time.Duration(ms) * time.Millisecond
	}
	return st
}

func (st *ProviderWarmStats) clone() *ProviderWarmStats {
	if st == nil {
		return nil
	}
	c := *st
	c.Phases = maps.Clone(st.Phases)
	return &c
}

// forkHost has srv fork the host of the fork request req with the five
// descriptors files, and with egress bind it an egress listener (in the
// returned child). A provider-warm server forks a child without them and
// hands back the child's own channel, on which the request and the
// descriptors go to the child directly: they never reach the server; the
// egress listener's port goes into the request's containment there.
func (z *Zygote) forkHost(srv *zserver, req map[string]any, files []*os.File, egress bool) (*zchild, error) {
	if z.spec.pw == nil {
		return srv.fork(req, files, egress)
	}
	fr := map[string]any{}
	if egress {
		fr["egress"] = true
	}
	c, err := srv.fork(fr, nil, egress)
	if err != nil {
		return nil, err
	}
	if egress {
		req["contain"].(map[string]any)["egress_port"] = c.egressPort
	}
	err = sendJob(c.channel, req, files)
	c.channel.Close()
	c.channel = nil
	if err == nil {
		return c, nil
	}
	// No host started: the child dies before it read anything of the
	// invocation, and its exit is awaited as any host's is.
	_ = c.kill(z.groupFlag)
	if werr := srv.await(c); werr != nil {
		z.l.log.Warn("launch: a provider-warm child that never got its invocation was lost", "pid", c.pid, "err", werr)
	}
	c.closeChannels()
	c.pidfd.Close()
	<-c.done
	return nil, &coldError{fmt.Errorf("handing the invocation to provider-warm child %d: %w", c.pid, err)}
}

// sendJob writes one job message with files as SCM_RIGHTS on a child's
// channel.
func sendJob(ch *os.File, req map[string]any, files []*os.File) error {
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	if len(b) > maxControlMessage {
		return fmt.Errorf("%w: %d bytes, at most %d", errControlTooLarge, len(b), maxControlMessage)
	}
	fds := make([]int, len(files))
	for i, f := range files {
		fds[i] = int(f.Fd())
	}
	rc, err := ch.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.Sendmsg(int(fd), b, unix.UnixRights(fds...), nil, unix.MSG_NOSIGNAL)
	}); err != nil {
		return err
	}
	if serr != nil {
		return errors.Join(errors.New("writing to the child's channel"), serr)
	}
	return nil
}

// match says why invocation context lc must not be served by
// the provider-warm server of pw (a *coldError), or nil.
func (pw *providerWarmSpec) match(lc *LaunchContext) error {
	if lc == nil {
		return &coldError{errors.New("the invocation has no launch context")}
	}
	if a := lc.Attempt; a.OrganizationID != pw.cfg.OrganizationID || a.ProjectID != pw.cfg.ProjectID {
		return &coldError{fmt.Errorf("the invocation's tenant (organization %q, project %q) is not the provider-warm server's", a.OrganizationID, a.ProjectID)}
	}
	d, err := bindingDigest(lc.Provider)
	if err != nil {
		return &coldError{fmt.Errorf("the invocation's binding: %w", err)}
	}
	if d != pw.bindingDigest {
		return &coldError{fmt.Errorf("the invocation's binding %s is not the one the provider-warm server activated (%s)", d, pw.bindingDigest)}
	}
	return nil
}

// checkLoaded checks from outside, where this process may look, what a
// provider-warm server said when it became ready: one thread, no
// descriptor beyond its own (0–3, and with a spare the spare's pidfd and
// channel), no child but its spare. A server that loaded a provider
// cannot be taken at its word. What this process may not read (another
// user's non-dumpable process, unless it is root) is left to the
// server's own check.
func checkLoaded(pid int, spare bool) error {
	proc := "/proc/" + strconv.Itoa(pid)
	tasks, err := os.ReadDir(proc + "/task")
	if err != nil {
		return nil
	}
	if len(tasks) != 1 {
		return fmt.Errorf("it runs %d threads", len(tasks))
	}
	wantKids, wantFDs := 0, 4
	if spare {
		wantKids, wantFDs = 1, 6
	}
	if b, err := os.ReadFile(fmt.Sprintf("%s/task/%d/children", proc, pid)); err == nil {
		if kids := strings.Fields(string(b)); len(kids) > wantKids {
			return fmt.Errorf("it has %d child processes (%s)", len(kids), strings.Join(kids, ", "))
		}
	}
	fds, err := os.ReadDir(proc + "/fd")
	if err != nil {
		return nil
	}
	if len(fds) > wantFDs {
		var open []string
		for _, fd := range fds {
			target, _ := os.Readlink(proc + "/fd/" + fd.Name())
			open = append(open, fd.Name()+" ("+target+")")
		}
		return fmt.Errorf("it holds %d descriptors, at most %d expected: %s", len(fds), wantFDs, strings.Join(open, ", "))
	}
	return nil
}
