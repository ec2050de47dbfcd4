package workdir

import (
	"encoding/json"
	"os"
	"path/filepath"
)

// Failure is the record of a test that failed or hung without delays on
// one build of its package (<work>/plans/<pkg>/<Test>.fails.json): such a
// test has no plan, and running it again on the same binary would only
// fail again (a hang costs its whole timeout), so prepare and detect skip
// it until the package's test binary changes or --retry-failing is given.
type Failure struct {
	BinaryHash string `json:"binary_hash"`
	Note       string `json:"note"`   // "fails without delays" or "timeout"
	Reason     string `json:"reason"` // the error prepare reported
	Output     string `json:"output"` // the run's output file
}

func (w *Dir) failurePath(pkg, test string) string {
	return w.Path("plans", filepath.FromSlash(pkg), test+".fails.json")
}

// RememberFailure records that a test failed without delays on this build.
func (w *Dir) RememberFailure(pkg, test string, f Failure) {
	path := w.failurePath(pkg, test)
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return
	}
	if os.MkdirAll(filepath.Dir(path), 0o755) == nil {
		_ = os.WriteFile(path, append(data, '\n'), 0o644)
	}
}

// ForgetFailure removes the record of an earlier failure of a test.
func (w *Dir) ForgetFailure(pkg, test string) {
	os.Remove(w.failurePath(pkg, test))
}

// RememberedFailure returns the record of a failure of the test on the
// build whose binary hash is hash, if there is one.
func (w *Dir) RememberedFailure(pkg, test, hash string) (Failure, bool) {
	data, err := os.ReadFile(w.failurePath(pkg, test))
	if err != nil {
		return Failure{}, false
	}
	var f Failure
	if json.Unmarshal(data, &f) != nil || f.BinaryHash != hash {
		return Failure{}, false
	}
	return f, true
}
