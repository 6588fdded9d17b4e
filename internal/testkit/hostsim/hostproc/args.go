//go:build linux

package hostproc

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// args is the parsed command line (doc/protocol.md, “Host command line”).
type args struct {
	command, detail, identity string
	positionals               int
	json                      bool
	request                   string
	bindingFD                 int
	contextFD                 int
	runtimeFD                 int
	limit, offset             int
}

// options are argparse's options: name → takes a value.
var options = map[string]bool{
	"--json": false, "--request": true, "--binding-fd": true, "--context-fd": true,
	"--runtime-fd": true, "--limit": true, "--offset": true,
}

// parseArgs emulates the host's argparse parser (add_help=False): unique
// prefixes of option names, --opt=value, the last repeated value wins, and
// the positionals (command, detail, identity) must come as one run.
func parseArgs(argv []string) (args, error) {
	a := args{request: "-", bindingFD: 3, contextFD: 3, runtimeFD: 4, limit: 20, offset: 0}
	var pos []string
	run := 0 // 0: no positional yet, 1: inside the run, 2: run ended
	for i := 0; i < len(argv); i++ {
		tok := argv[i]
		if !strings.HasPrefix(tok, "-") || tok == "-" {
			if run == 2 {
				return a, fmt.Errorf("unrecognized arguments: %s", tok)
			}
			run = 1
			pos = append(pos, tok)
			continue
		}
		if run == 1 {
			run = 2
		}
		name, val, hasVal := strings.Cut(tok, "=")
		full, err := resolveOption(name)
		if err != nil {
			return a, err
		}
		if !options[full] {
			if hasVal {
				return a, fmt.Errorf("%s takes no value", full)
			}
			a.json = true
			continue
		}
		if !hasVal {
			if i+1 >= len(argv) {
				return a, fmt.Errorf("%s expects a value", full)
			}
			i++
			val = argv[i]
		}
		if full == "--request" {
			if val != "-" {
				return a, errors.New("--request: invalid choice")
			}
			a.request = val
			continue
		}
		n, err := strconv.Atoi(val)
		if err != nil {
			return a, fmt.Errorf("%s: invalid int value %q", full, val)
		}
		switch full {
		case "--binding-fd":
			a.bindingFD = n
		case "--context-fd":
			a.contextFD = n
		case "--runtime-fd":
			a.runtimeFD = n
		case "--limit":
			a.limit = n
		case "--offset":
			a.offset = n
		}
	}
	if len(pos) == 0 || len(pos) > 3 {
		return a, errors.New("expected 1 to 3 positional arguments")
	}
	switch pos[0] {
	case "describe", "doctor", "capabilities", "invoke":
	default:
		return a, fmt.Errorf("invalid choice %q", pos[0])
	}
	a.command = pos[0]
	a.positionals = len(pos)
	if len(pos) > 1 {
		a.detail = pos[1]
	}
	if len(pos) > 2 {
		a.identity = pos[2]
	}
	return a, nil
}

func resolveOption(name string) (string, error) {
	if _, ok := options[name]; ok {
		return name, nil
	}
	var match []string
	for o := range options {
		if strings.HasPrefix(o, name) && len(name) > 2 {
			match = append(match, o)
		}
	}
	if len(match) != 1 {
		return "", fmt.Errorf("unrecognized or ambiguous option %s", name)
	}
	return match[0], nil
}
