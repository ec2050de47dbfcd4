package inject

import (
	"fmt"
	"os"

	"github.com/memorder/wafl/abi"
	"github.com/memorder/wafl/plans"
)

// checkBinary refuses a plan made for another test binary: site ids, and
// with them every decision of the plan, mean something only in the binary
// the plan was made for (docs/plan-format.md). A plan without a binary
// hash (written by hand) is taken as it is. Hashing the executable is done
// once per detection run, in Setup, unless the plan carries the stamp the
// binary had when wafl hashed it and the executable still has it
// (abi.Stamp): hashing a test binary of tens of megabytes costs a short
// test's detection run more CPU than the test itself.
func checkBinary(p *plans.Plan, planPath string) error {
	want := p.Provenance.BinaryHash
	if want == "" {
		return nil
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("plan %s: cannot find this test binary to check it is the plan's: %v", planPath, err)
	}
	if s := p.Provenance.BinaryStamp; s != nil {
		if now, ok := abi.StampOf(exe); ok && now == *s {
			return nil
		}
	}
	got, err := abi.HashFile(exe)
	if err != nil {
		return fmt.Errorf("plan %s: cannot hash this test binary to check it is the plan's: %v", planPath, err)
	}
	if got != want {
		return fmt.Errorf("plan %s was made for another build of %s (binary %s, this one is %s %s): "+
			"its site ids mean nothing here; run 'wafl reproduce' on the bug's report, or 'wafl prepare' again",
			planPath, p.Provenance.Package, short(want), exe, short(got))
	}
	return nil
}

func short(hash string) string {
	if len(hash) > 19 {
		return hash[:19]
	}
	return hash
}
