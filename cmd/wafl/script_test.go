package main

import (
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// update rewrites the scripts' expected files when a cmp fails:
// go test ./cmd/wafl -run TestScripts -update.
var update = flag.Bool("update", false, "update testdata/script files whose cmp fails")

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"wafl": func() { os.Exit(Main()) },
	})
}

// TestScripts runs the user scenarios in testdata/script: each creates a
// module, runs wafl on it and checks exit status and output. wafl runs in
// its own process, so scripts say so: exec wafl.
func TestScripts(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go command not found")
	}
	goEnv := map[string]string{}
	out, err := exec.Command("go", "env", "GOCACHE", "GOMODCACHE", "GOPROXY", "GOROOT").Output()
	if err != nil {
		t.Fatal(err)
	}
	vals := strings.Split(strings.TrimSpace(string(out)), "\n")
	for i, k := range []string{"GOCACHE", "GOMODCACHE", "GOPROXY", "GOROOT"} {
		goEnv[k] = vals[i]
	}
	examples, err := filepath.Abs("../../examples")
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: true,
		UpdateScripts:       *update,
		Setup: func(env *testscript.Env) error {
			// Share the host's build and module caches: the scripts build
			// real test binaries and must not download anything.
			for k, v := range goEnv {
				env.Setenv(k, v)
			}
			env.Setenv("GOFLAGS", "-modcacherw")
			// The corpus kernels, for scripts that copy one in.
			env.Setenv("EXAMPLES", examples)
			env.Setenv("GOTOOLCHAIN", "local")
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			// exactseeds FILE: every "seed" in the JSON of FILE is a number
			// a float64 holds exactly (at most 2^53-1), and there is one.
			"exactseeds": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) != 1 || neg {
					ts.Fatalf("usage: exactseeds FILE")
				}
				dec := json.NewDecoder(strings.NewReader(ts.ReadFile(args[0])))
				dec.UseNumber()
				var v any
				ts.Check(dec.Decode(&v))
				n := 0
				var walk func(any)
				walk = func(v any) {
					switch v := v.(type) {
					case map[string]any:
						for k, x := range v {
							if num, ok := x.(json.Number); ok && k == "seed" {
								u, err := strconv.ParseUint(num.String(), 10, 64)
								if err != nil || u > 1<<53-1 {
									ts.Fatalf("seed %s is not exact in a float64", num)
								}
								n++
							}
							walk(x)
						}
					case []any:
						for _, x := range v {
							walk(x)
						}
					}
				}
				walk(v)
				if n == 0 {
					ts.Fatalf("%s has no seed", args[0])
				}
			},
			// validjson FILE: FILE holds one valid JSON value.
			"validjson": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) != 1 {
					ts.Fatalf("usage: validjson FILE")
				}
				data := ts.ReadFile(args[0])
				var v any
				err := json.Unmarshal([]byte(data), &v)
				if neg && err == nil {
					ts.Fatalf("%s is valid JSON", args[0])
				}
				if !neg && err != nil {
					ts.Fatalf("%s: %v", args[0], err)
				}
			},
		},
	})
}
