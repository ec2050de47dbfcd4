package main

import (
	"fmt"
	"strings"
)

// goTestFlags are the flags of 'go test' and its build flags, by name.
// People type them out of habit ('wafl detect -count 2 ./...'); without
// this table cobra would read "-count" as the shorthands -c -o -u ...
var goTestFlags = map[string]string{
	// Mapped onto wafl's own flags.
	"run": "--run", "skip": "--skip", "timeout": "--timeout", "tags": "--tags",
	"short": "--short", "cpu": "--cpu",
	// Not supported, with the reason.
	"count":        "",
	"race":         "wafl builds its own instrumented test binaries; the race detector and wafl's delays do not mix",
	"msan":         "wafl builds its own instrumented test binaries",
	"asan":         "wafl builds its own instrumented test binaries",
	"cover":        "coverage is not measured by wafl",
	"covermode":    "coverage is not measured by wafl",
	"coverpkg":     "coverage is not measured by wafl",
	"coverprofile": "coverage is not measured by wafl",
	"bench":        "wafl runs tests, not benchmarks",
	"benchtime":    "wafl runs tests, not benchmarks",
	"benchmem":     "wafl runs tests, not benchmarks",
	"fuzz":         "wafl runs tests, not fuzz targets",
	"failfast":     "wafl runs each test in its own process",
	"shuffle":      "wafl runs each test in its own process",
	"list":         "use 'go test -list' directly",
	"cpuprofile":   "profiles are not collected by wafl",
	"memprofile":   "profiles are not collected by wafl",
	"mutexprofile": "profiles are not collected by wafl",
	"blockprofile": "profiles are not collected by wafl",
	"trace":        "execution traces are not collected by wafl",
	"outputdir":    "wafl writes everything under its work directory (--dir)",
	"vet":          "wafl never runs vet",
	"exec":         "wafl runs its test binaries itself",
	"ldflags":      "build flags other than -tags are not supported",
	"gcflags":      "build flags other than -tags are not supported",
	"mod":          "build flags other than -tags are not supported",
	"modfile":      "wafl uses its own alternate go.mod",
	"overlay":      "wafl uses its own overlay",
	"trimpath":     "build flags other than -tags are not supported",
	"work":         "build flags other than -tags are not supported",
	"fullpath":     "wafl prints its own report",
	"args":         "arguments for the test binary are not supported",
}

// translateGoTestFlags rewrites go test's single-dash flags into wafl's
// (-count N is detect's --runs N) and rejects the others with "not
// supported: ...". Arguments after "--" are left alone.
func translateGoTestFlags(args []string) ([]string, error) {
	cmd := ""
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			cmd = a
			break
		}
	}
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			out = append(out, args[i:]...)
			break
		}
		if !strings.HasPrefix(a, "-") || strings.HasPrefix(a, "--") || len(a) < 2 {
			out = append(out, a)
			continue
		}
		name, val, hasVal := strings.Cut(a[1:], "=")
		name = strings.TrimPrefix(name, "test.")
		repl, known := goTestFlags[name]
		switch {
		case !known || len(name) < 2:
			// Single letters are wafl's own shorthands (-v, -p, -C, -n, -o);
			// anything else is cobra's to judge.
			out = append(out, a)
		case name == "count":
			if cmd != "detect" {
				return nil, fmt.Errorf("not supported: -count (wafl runs each test once per process; detect's --runs N sets the number of detection runs)")
			}
			if !hasVal {
				if i+1 >= len(args) {
					return nil, fmt.Errorf("-count needs a value")
				}
				i++
				val = args[i]
			}
			out = append(out, "--runs="+val)
		case strings.HasPrefix(repl, "--"):
			if hasVal {
				out = append(out, repl+"="+val)
			} else {
				out = append(out, repl)
			}
		default:
			return nil, fmt.Errorf("not supported: -%s (%s)", name, repl)
		}
	}
	return out, nil
}
