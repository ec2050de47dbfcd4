package pipeline

import (
	"fmt"

	"github.com/memorder/wafl/internal/pipeline/workdir"
)

// rememberFailure records that test j failed without delays on this build.
func rememberFailure(ws *workdir.Dir, j job, note, reason, output string) {
	ws.RememberFailure(j.pkg.ImportPath, j.test, workdir.Failure{BinaryHash: j.pkg.hash, Note: note, Reason: reason, Output: output})
}

// forgetFailure removes the record of an earlier failure of test j.
func forgetFailure(ws *workdir.Dir, j job) { ws.ForgetFailure(j.pkg.ImportPath, j.test) }

// rememberedFailure returns the error to report, without running it, for
// a test that failed without delays on this very build, or nil.
func rememberedFailure(ws *workdir.Dir, j job, retry bool) error {
	if retry {
		return nil
	}
	f, ok := ws.RememberedFailure(j.pkg.ImportPath, j.test, j.pkg.hash)
	if !ok {
		return nil
	}
	return &testError{phase: "prepare", note: f.Note + " (remembered)", err: fmt.Errorf(
		"%s on this build of the package, in an earlier run; not run again until the package changes or --retry-failing is given\n%s",
		f.Note, f.Reason)}
}
