package main

import (
	"fmt"
	"strings"
)

// goTestFlags are the flags of 'go test', of the test binaries it runs and
// of the go build flags it takes, by name, with what wafl does with each.
// People type them out of habit ('wafl detect -count 2 ./...'); without
// this table cobra would read "-count" as the shorthands -c -o -u ...
// TestGoTestFlagsComplete checks it against the installed go command and a
// real test binary, so a flag a new Go release adds cannot slip through to
// cobra's shorthand parser.
//
// A value starting with "--" is the wafl flag the go test flag becomes;
// "" marks a flag handled in translateGoTestFlags; any other value is the
// reason the flag is refused.
var goTestFlags = map[string]string{
	// Mapped onto wafl's own flags.
	"run": "--run", "skip": "--skip", "timeout": "--timeout", "tags": "--tags",
	"short": "--short", "cpu": "--cpu",
	"count": "", // detect's --runs
	// Single letters that mean in wafl what they mean in go test.
	"v": "--verbose", "p": "--parallel", "C": "--chdir",
	"n": "", // go's dry run; reproduce's own -n (ownShorthands)

	// Refused, with the reason.
	"json":                 "go test's test2json stream; wafl's --json prints the bug report as JSON",
	"parallel":             "t.Parallel tests run as go test runs them; wafl's --parallel (-p) sets how many test processes run at once",
	"failfast":             "wafl runs every selected test and reports every bug it exposes",
	"shuffle":              "wafl chooses the order of the tests it runs",
	"list":                 "use 'go test -list' directly",
	"fullpath":             "wafl prints its own report, with full paths",
	"race":                 "wafl builds its own instrumented test binaries; the race detector and wafl's delays do not mix",
	"msan":                 "wafl builds its own instrumented test binaries",
	"asan":                 "wafl builds its own instrumented test binaries",
	"cover":                "coverage is not measured by wafl",
	"covermode":            "coverage is not measured by wafl",
	"coverpkg":             "coverage is not measured by wafl",
	"coverprofile":         "coverage is not measured by wafl",
	"gocoverdir":           "coverage is not measured by wafl",
	"bench":                "wafl runs tests, not benchmarks",
	"benchtime":            "wafl runs tests, not benchmarks",
	"benchmem":             "wafl runs tests, not benchmarks",
	"fuzz":                 "wafl runs tests, not fuzz targets",
	"fuzztime":             "wafl runs tests, not fuzz targets",
	"fuzzminimizetime":     "wafl runs tests, not fuzz targets",
	"fuzzcachedir":         "wafl runs tests, not fuzz targets",
	"fuzzworker":           "wafl runs tests, not fuzz targets",
	"cpuprofile":           "profiles are not collected by wafl",
	"memprofile":           "profiles are not collected by wafl",
	"memprofilerate":       "profiles are not collected by wafl",
	"mutexprofile":         "profiles are not collected by wafl",
	"mutexprofilefraction": "profiles are not collected by wafl",
	"blockprofile":         "profiles are not collected by wafl",
	"blockprofilerate":     "profiles are not collected by wafl",
	"trace":                "execution traces are not collected by wafl",
	"outputdir":            "wafl writes everything under its work directory (--dir)",
	"artifacts":            "wafl writes everything under its work directory (--dir)",
	"testlogfile":          "an internal flag of the go command",
	"paniconexit0":         "an internal flag of the go command",
	"vet":                  "wafl never runs vet",
	"exec":                 "wafl runs its test binaries itself",
	"args":                 "arguments for the test binary are not supported",
	"c":                    "wafl builds its own instrumented test binaries under its work directory",
	"o":                    "wafl builds its own instrumented test binaries under its work directory",
	"a":                    "wafl's builds go through the go build cache, which decides what to rebuild",
	"x":                    "wafl does not print the commands it runs; -v prints every step",
	"work":                 "wafl uses its own work directory (--dir)",
	"ldflags":              "build flags other than -tags are not supported",
	"gcflags":              "build flags other than -tags are not supported",
	"asmflags":             "build flags other than -tags are not supported",
	"gccgoflags":           "build flags other than -tags are not supported",
	"buildmode":            "build flags other than -tags are not supported",
	"buildvcs":             "build flags other than -tags are not supported",
	"compiler":             "build flags other than -tags are not supported",
	"installsuffix":        "build flags other than -tags are not supported",
	"linkshared":           "build flags other than -tags are not supported",
	"pkgdir":               "build flags other than -tags are not supported",
	"pgo":                  "build flags other than -tags are not supported",
	"toolexec":             "build flags other than -tags are not supported",
	"trimpath":             "build flags other than -tags are not supported",
	"mod":                  "build flags other than -tags are not supported",
	"modcacherw":           "build flags other than -tags are not supported",
	"modfile":              "wafl uses its own alternate go.mod",
	"overlay":              "wafl uses its own overlay",
}

// ownShorthands are the one-letter flags of wafl commands that go test
// uses for something else: with that command they are wafl's.
var ownShorthands = map[string]string{"reproduce": "n", "analyze": "o"}

// translateGoTestFlags rewrites go test's single-dash flags into wafl's
// (-count N is detect's --runs N) and rejects the others by name with
// "not supported: ...". Arguments after "--" are left alone.
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
		if !strings.HasPrefix(a, "-") || strings.HasPrefix(a, "--") || len(a) < 2 || a[1] >= '0' && a[1] <= '9' {
			// Not a single-dash flag: an argument, a wafl flag or a
			// negative value (--timeout -1s), which the flag parser judges.
			out = append(out, a)
			continue
		}
		name, val, hasVal := strings.Cut(a[1:], "=")
		name = strings.TrimPrefix(name, "test.")
		repl, known := goTestFlags[name]
		switch {
		case !known && len(name) == 1:
			// Not a go test flag: cobra's to judge.
			out = append(out, a)
		case !known:
			// Several shorthands in one (-vp 2) or a flag of nobody's:
			// never cobra's shorthand parser, which would read "-json" as
			// -j -s -o -n.
			return nil, fmt.Errorf("unknown flag -%s (wafl's own flags take two dashes: --%s; see 'wafl %s --help')", name, name, cmd)
		case ownShorthands[cmd] == name:
			out = append(out, a)
		case name == "n":
			return nil, fmt.Errorf("not supported: -n (wafl does not print the commands it runs; -v prints every step)")
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
