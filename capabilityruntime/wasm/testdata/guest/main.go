// Command guest is the test program of the wasm backend. The tests build it
// with GOOS=wasip1 GOARCH=wasm (and the benchmarks also natively, to compare
// it with a one-shot process). It speaks neuron/capability-runtime-v1-json
// by hand, so that each behaviour controls exactly what reaches stdout,
// stderr and the exit status.
//
// The behaviour is the request's "do" parameter:
//
//	echo    result is the params, unchanged (the default)
//	env     result holds the environment, the arguments and the root
//	        directory's listing as the module sees them
//	fail    a controlled failure: error "asked to fail", result {"partial":true}
//	exit    "exiting with 3" on stderr, then exit status 3
//	loop    an endless loop that calls nothing
//	sleep   sleeps "ms" milliseconds, then answers like echo
//	hog     allocates and touches "mib" MiB (default 1024), 1 MiB at a time
//	flood   writes to stdout forever, ignoring write errors
//	noise   writes "kib" KiB of numbered lines to stderr, then exits 1
//	garbage writes something that is not JSON and exits 0
//	read    reads the file "path" and answers its content
//	dial    dials "addr" over TCP and answers what happened
//	listen  accepts on descriptor 3, where a host that grants a socket
//	        would put it, and answers what happened
package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"strings"
	"time"
)

func main() {
	var req struct {
		Params map[string]any `json:"params"`
	}
	if err := json.NewDecoder(os.Stdin).Decode(&req); err != nil {
		fmt.Fprintf(os.Stderr, "decoding the request: %v\n", err)
		os.Exit(1)
	}
	p := req.Params
	num := func(k string, def float64) float64 {
		if f, ok := p[k].(float64); ok {
			return f
		}
		return def
	}
	str := func(k string) string { s, _ := p[k].(string); return s }
	switch str("do") {
	case "", "echo":
		answer(p, "")
	case "env":
		var ls []string
		if ents, err := os.ReadDir("/"); err != nil {
			ls = []string{"error: " + err.Error()}
		} else {
			for _, e := range ents {
				ls = append(ls, e.Name())
			}
		}
		answer(map[string]any{"env": os.Environ(), "args": os.Args, "root": ls}, "")
	case "fail":
		answer(map[string]any{"partial": true}, "asked to fail")
	case "exit":
		fmt.Fprintln(os.Stderr, "exiting with 3")
		os.Exit(3)
	case "loop":
		n := 0
		for {
			n++
		}
	case "sleep":
		time.Sleep(time.Duration(num("ms", 0)) * time.Millisecond)
		answer(p, "")
	case "hog":
		var keep [][]byte
		for i := 0; i < int(num("mib", 1024)); i++ {
			b := make([]byte, 1<<20)
			for j := 0; j < len(b); j += 4096 {
				b[j] = byte(i + j) // touch every page
			}
			keep = append(keep, b)
		}
		answer(map[string]any{"held": len(keep)}, "")
	case "flood":
		line := []byte(strings.Repeat("x", 4095) + "\n")
		for {
			os.Stdout.Write(line)
		}
	case "noise":
		for i := 0; i < int(num("kib", 64))*16; i++ {
			fmt.Fprintf(os.Stderr, "noise line %08d %s\n", i, strings.Repeat("n", 42))
		}
		os.Exit(1)
	case "garbage":
		fmt.Println("this is not json")
	case "read":
		b, err := os.ReadFile(str("path"))
		if err != nil {
			answer(nil, "read: "+err.Error())
			return
		}
		answer(map[string]any{"content": string(b)}, "")
	case "dial":
		c, err := net.Dial("tcp", str("addr"))
		if err != nil {
			answer(nil, "dial: "+err.Error())
			return
		}
		c.Close()
		answer(map[string]any{"dialed": true}, "")
	case "listen":
		l, err := net.FileListener(os.NewFile(3, "socket"))
		if err != nil {
			answer(nil, "listen: "+err.Error())
			return
		}
		l.Close()
		answer(map[string]any{"listening": true}, "")
	default:
		answer(nil, "unknown behaviour "+str("do"))
	}
}

func answer(result map[string]any, failure string) {
	resp := map[string]any{"result": result}
	if failure != "" {
		resp["error"] = failure
	}
	if err := json.NewEncoder(os.Stdout).Encode(resp); err != nil {
		fmt.Fprintf(os.Stderr, "writing the response: %v\n", err)
		os.Exit(1)
	}
}
