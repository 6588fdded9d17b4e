package launch

import (
	"net"
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/zeoruntime/runtimeipc/internal/testkit/leaktest"
)

// FuzzZygoteMessage feeds one control message, with or without a
// descriptor (a pidfd of this process), to the launcher's reader of a
// server's messages, with fork request 1 pending and host 7 running. Any
// message is either delivered (a fork answer to request 1, whose pidfd
// then names the pid it claims; an exit report of host 7) or refused
// with an error; nothing panics and no descriptor is left open.
func FuzzZygoteMessage(f *testing.F) {
	for _, seed := range []string{
		`{"op":"forked","id":1,"pid":PID,"spare":false}`, `{"op":"forked","id":1,"pid":7}`,
		`{"op":"refused","id":1,"reason":"threads"}`, `{"op":"refused","id":2,"reason":"x"}`,
		`{"op":"exit","pid":7,"code":-9}`, `{"op":"exit","pid":8,"code":0}`, `{"op":"exit","pid":7}`,
		`{"op":"ready","pid":1}`, `{"op":"bogus"}`, `{"op":"exit","pid":7,"code":0,"x":1}`, `{}`, `[]`, `{"op":`, "\x00",
	} {
		f.Add([]byte(seed), true)
		f.Add([]byte(seed), false)
	}
	fds0 := leaktest.OpenFDs(f)
	f.Fuzz(func(t *testing.T, msg []byte, withFD bool) {
		if len(msg) == 0 || len(msg) > 4<<10 {
			return
		}
		pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		f := os.NewFile(uintptr(pair[0]), "fuzz")
		fc, err := net.FileConn(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		defer fc.Close()
		defer unix.Close(pair[1])
		var oob []byte
		if withFD {
			pidfd, err := unix.PidfdOpen(os.Getpid(), 0)
			if err != nil {
				t.Skip(err)
			}
			defer unix.Close(pidfd)
			oob = unix.UnixRights(pidfd)
		}
		msg = []byte(strings.ReplaceAll(string(msg), "PID", strconv.Itoa(os.Getpid())))
		if err := unix.Sendmsg(pair[1], msg, oob, nil, 0); err != nil {
			t.Fatal(err)
		}
		host := &zchild{pid: 7, exit: make(chan int, 1)}
		request := make(chan zreply, 1)
		s := &zserver{z: &Zygote{}, conn: fc.(*net.UnixConn), pid: os.Getppid(), lost: make(chan struct{}),
			pending: map[uint64]zwait{1: {ch: request}}, children: map[int]*zchild{7: host}}
		m, files, err := s.read(make([]byte, 8<<10))
		if err == nil {
			err = s.dispatch(m, files)
		}
		if err != nil {
			closeFiles(files)
			return
		}
		switch m.Op {
		case "forked":
			r := <-request
			if r.child == nil || r.child.pid != os.Getpid() || s.children[m.PID] != r.child {
				t.Fatalf("%q delivered %+v", msg, r)
			}
			r.child.pidfd.Close()
			<-r.child.done
		case "refused":
			if r := <-request; r.refused != m.Reason || r.refused == "" {
				t.Fatalf("%q delivered %+v", msg, r)
			}
		case "exit":
			if code := <-host.exit; m.PID != 7 || code != *m.Code || s.children[7] != nil {
				t.Fatalf("%q delivered exit %d", msg, code)
			}
		default:
			t.Fatalf("%q delivered as %q", msg, m.Op)
		}
	})
	if n := leaktest.OpenFDs(f); n > fds0 {
		f.Errorf("descriptors: %d before, %d after", fds0, n)
	}
}
