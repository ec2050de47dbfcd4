package vet

import (
	"go/token"
	"reflect"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/passes/buildssa"
)

// Analyzer reports MEMORDER hints: possible use-before-init,
// use-after-dispose, check-then-act and WaitGroup misuse between goroutines.
var Analyzer = &analysis.Analyzer{
	Name:       "memorder",
	Doc:        doc,
	URL:        "https://github.com/memorder/wafl/blob/main/docs/vet.md",
	Requires:   []*analysis.Analyzer{buildssa.Analyzer},
	Run:        run,
	ResultType: reflect.TypeFor[[]Hint](),
}

const doc = `report goroutine order bugs: use before init, use after dispose, check-then-act, WaitGroup Add after go

memorder looks for MEMORDER bugs: a value one goroutine uses before another
initialized it (go s.loop(); s.h = &H{}), or after another disposed of it
(set it to nil, closed it, deleted its map entry) with no order the
analyzer can prove between them; a close guarded by a check of the same state outside one critical
section; a WaitGroup Add after the goroutine that calls Done started. Each
hint is a place to look, or to write a test for; wafl prepare and wafl
detect turn such a place into a crash when the bug is real.`

// A Hint is one diagnostic with its kind, as the analyzer's result for
// drivers that want more than the text (SARIF, work-directory marks).
type Hint struct {
	Kind       string
	Diagnostic analysis.Diagnostic
	// Pair are the two accesses of the hint: the dispose and the use, the
	// init and the use, the check and the act, the Add and the Done.
	Pair [2]token.Pos
}

func run(pass *analysis.Pass) (any, error) {
	ssaRes := pass.ResultOf[buildssa.Analyzer].(*buildssa.SSA)
	c := newChecker(pass, ssaRes.Pkg, ssaRes.SrcFuncs)
	c.run()
	var out []Hint
	for _, h := range c.hints {
		if c.inTestFile(h.pos) {
			continue
		}
		d := analysis.Diagnostic{
			Pos:            h.pos,
			Category:       h.kind,
			Message:        h.msg,
			Related:        h.related,
			SuggestedFixes: h.fixes,
		}
		pass.Report(d)
		out = append(out, Hint{Kind: h.kind, Diagnostic: d, Pair: h.pair})
	}
	return out, nil
}
