package pipeline

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// failure is the record of a test that failed or hung without delays on
// one build of its package (<work>/plans/<pkg>/<Test>.fails.json): such a
// test has no plan, and running it again on the same binary would only
// fail again (a hang costs its whole timeout), so prepare and detect skip
// it until the package's test binary changes or --retry-failing is given.
type failure struct {
	BinaryHash string `json:"binary_hash"`
	Note       string `json:"note"`   // "fails without delays" or "timeout"
	Reason     string `json:"reason"` // the error prepare reported
	Output     string `json:"output"` // the run's output file
}

func (w *workspace) failurePath(pkg, test string) string {
	return w.path("plans", filepath.FromSlash(pkg), test+".fails.json")
}

// rememberFailure records that test j failed without delays on this build.
func rememberFailure(ws *workspace, j job, note, reason, output string) {
	path := ws.failurePath(j.pkg.ImportPath, j.test)
	data, err := json.MarshalIndent(failure{BinaryHash: j.pkg.hash, Note: note, Reason: reason, Output: output}, "", "  ")
	if err != nil {
		return
	}
	if os.MkdirAll(filepath.Dir(path), 0o755) == nil {
		_ = os.WriteFile(path, append(data, '\n'), 0o644)
	}
}

// forgetFailure removes the record of an earlier failure of test j.
func forgetFailure(ws *workspace, j job) {
	os.Remove(ws.failurePath(j.pkg.ImportPath, j.test))
}

// rememberedFailure returns the error to report, without running it, for
// a test that failed without delays on this very build, or nil.
func rememberedFailure(ws *workspace, j job, retry bool) error {
	if retry {
		return nil
	}
	data, err := os.ReadFile(ws.failurePath(j.pkg.ImportPath, j.test))
	if err != nil {
		return nil
	}
	var f failure
	if json.Unmarshal(data, &f) != nil || f.BinaryHash != j.pkg.hash {
		return nil
	}
	return &testError{phase: "prepare", note: f.Note + " (remembered)", err: fmt.Errorf(
		"%s on this build of the package, in an earlier run; not run again until the package changes or --retry-failing is given\n%s",
		f.Note, f.Reason)}
}
