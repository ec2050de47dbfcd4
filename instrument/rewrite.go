// Rewriting one file, in three passes: collection decides on the
// type-checked go/ast what to change (collect.go), apply makes those changes
// on the file's dst tree (apply.go), and the position pass keeps every
// original statement on the user's line (positions.go). The actions declared
// here are what collection hands to apply.

package instrument

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"sort"

	"github.com/dave/dst/decorator"
)

// fileResult is the outcome of rewriting one file.
type fileResult struct {
	src      []byte
	numSites int
	changed  bool
	notes    []string // constructs left alone on purpose
}

// rewriteFile rewrites file, whose path (unadjusted by //line comments) is
// filename. With lineDirectives, statements that moved get /*line*/
// directives back to their original lines; files that carry their own
// //line directives are rewritten without.
func rewriteFile(fset *token.FileSet, info *types.Info, shared map[*types.Var]bool, fl *flow, alloc *SiteAlloc, file *ast.File, filename string, isTest, lineDirectives bool) (*fileResult, error) {
	ed := collect(fset, info, shared, fl, alloc, file)
	hoistLocks(fset, info, alloc, file, ed) // locks.go

	dec := decorator.NewDecorator(fset)
	df, err := dec.DecorateFile(file)
	if err != nil {
		return nil, fmt.Errorf("%s: decorating: %w", filename, err)
	}
	res := &fileResult{numSites: ed.numSites, notes: ed.notes}
	if len(ed.acts) > 0 {
		res.changed = true
		apply(fset, dec, df, ed)
	}
	if isTest && wrapTestMain(df) {
		res.changed = true
	}
	if isTest && adoptInTests(df) {
		res.changed = true
	}
	if isTest && markTests(fset, info, dec, file, df) { // testmarks.go; its mark goes before the adoption
		res.changed = true
	}
	if !res.changed {
		return res, nil
	}
	exitNames := make([]string, 0, len(ed.exitUse))
	for name := range ed.exitUse {
		exitNames = append(exitNames, name)
	}
	sort.Strings(exitNames)
	for _, name := range exitNames {
		df.Decls = append(df.Decls, blankUse(name))
	}
	atomicNames := make([]string, 0, len(ed.atomicUse))
	for name := range ed.atomicUse {
		atomicNames = append(atomicNames, name)
	}
	sort.Strings(atomicNames)
	for _, name := range atomicNames {
		df.Decls = append(df.Decls, blankAtomicUse(name, ed.atomicUse[name]))
	}

	if lineDirectives {
		markPositions(dec, df, fset)
	}
	var buf bytes.Buffer
	if err := decorator.Fprint(&buf, df); err != nil {
		return nil, fmt.Errorf("%s: printing rewritten file: %w", filename, err)
	}
	if lineDirectives {
		res.src = fixPositions(buf.Bytes(), filename)
	} else {
		res.src = dropMarkers(buf.Bytes())
	}
	return res, nil
}

// edits is what collection decided for one file: the actions on original
// nodes, which apply carries out on the dst tree.
type edits struct {
	acts    map[ast.Node][]action
	exitUse map[string]bool // import names of os whose Exit was replaced
	// atomicUse: import names of sync/atomic whose pointer functions
	// were replaced, with one such function (the file's only use of the
	// import may be gone).
	atomicUse map[string]string
	numSites  int
	numCtx    int      // func values wrapped with their creation context
	notes     []string // constructs left alone on purpose, "file:line:col: why"
}

func (e *edits) add(n ast.Node, a action) {
	e.acts[n] = append(e.acts[n], a)
}

func (e *edits) has(n ast.Node, k actKind) bool {
	for _, a := range e.acts[n] {
		if a.kind == k {
			return true
		}
	}
	return false
}

// actKind is what the rewriter does to one original node.
type actKind int

const (
	actUse             actKind = iota // slot expr X -> (*_waflUse(id, &X))
	actStore                          // rhs R -> _waflStore/_waflInit/_waflStoreAny(id, R, &L) or _waflNil(id, &L)
	actSend                           // channel expr C -> _waflSend(id, C)
	actClose                          // close(C) -> _waflClose(id, C)
	actAtomicUse                      // atomic receiver E -> _waflUse(id, &E)
	actAtomicStore                    // E.Store(v), E.Swap(v), E.CompareAndSwap(o, v) -> _waflPtrStore/…(id, &E, args…)
	actWaitGroup                      // wg.Add(n) (Done, Wait, Go) -> _waflWGAdd(id, &wg, n)
	actCtx                            // func value F handed to another package -> _waflCtx0(F) (…CtxR, CtxA, CtxAR, CtxAB)
	actAtomicFunc                     // atomic.StorePointer(a, v) (Swap, CompareAndSwap) -> _waflStorePointer(id, a, v)
	actTuple                          // L1, L2 = f() with slots -> block with temporaries
	actGo                             // go statement -> Fork/Adopt
	actExit                           // os.Exit -> _waflExit
	actCheckChan                      // select clause with a check: body starts with _waflCheckChan(id, E) (checks.go)
	actCheckFlag                      // bool field x.f -> _waflCheckFlag(id, &x.f)
	actCheckAtomicBool                // E.Load() on an atomic.Bool -> _waflCheckAtomicBool(id, &E)
)

type action struct {
	kind actKind
	site uint32
	// op is, for actStore, the store's op ("init", "dispose", "store",
	// "store-any"; see storeOpFor) and, for actAtomicStore, the atomic's
	// kind ("pointer", "value").
	op  string
	ptr bool // actAtomic*: receiver already a pointer
	// method is, for actAtomicStore, the method: Store, Swap or
	// CompareAndSwap. For actAtomicFunc and actWaitGroup, op is the
	// helper's name.
	method string
	lhs    ast.Expr           // actStore: the slot stored to; actAtomicState: the atomic's expression; actEntryDelete: the map
	key    ast.Expr           // actEntryDelete: the key
	pos    token.Pos          // actEntryDelete: the delete's position, for the marker of its dispose statement
	site2  uint32             // actAtomicState of a CompareAndSwap: its state site
	slots  map[int]*tupleSlot // actTuple: lhs index -> store
	// copyFun and copyArgs are, for actGo on a call of anything but a
	// function literal, whether the function value and each argument are
	// evaluated into temporaries (constants, nil and declared functions
	// are not).
	copyFun  bool
	copyArgs []bool
}

// tupleSlot is one stored-to slot of an actTuple.
type tupleSlot struct {
	site uint32
	op   string // as action.op of actStore, never "dispose"
}
