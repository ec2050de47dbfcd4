// Slot types: the site table records the static type of each site's slot
// (or channel, WaitGroup, atomic) so that the analyzer can tell two
// objects apart that only share an address: a channel freed by the
// garbage collector and a new one of another type allocated at its
// address look like one object to the trace, which keys objects by
// address (docs/instrumentation.md, "Slot types"; analyze/slottypes.go).

package instrument

import (
	"go/types"
	"strings"
)

// slotTypeString is the type the site table records for a site of the
// given kind whose expression has type t, or "" when it cannot tell two
// objects apart: type parameters (one generic site serves every
// instantiation), aliases, unsafe.Pointer (any pointer). Channels lose
// their direction (close on a chan<- T and a receive on a <-chan T can be
// one channel); WaitGroups and atomics their pointer (wg.Add on a
// *sync.WaitGroup and s.wg.Done() are one WaitGroup).
func slotTypeString(kind string, t types.Type) string {
	if t == nil || !plainType(t, 0) {
		return ""
	}
	if strings.HasPrefix(kind, "wg-") || strings.HasPrefix(kind, "atomic-") {
		if p, ok := t.(*types.Pointer); ok {
			t = p.Elem()
		}
	}
	if ch, ok := t.Underlying().(*types.Chan); ok {
		return "chan " + types.TypeString(ch.Elem(), nil)
	}
	return types.TypeString(t, nil)
}

// plainType reports whether t's printed form names it exactly: no type
// parameter, alias or unsafe.Pointer anywhere in it (depth bounds
// recursive types).
func plainType(t types.Type, depth int) bool {
	if depth > 8 {
		return false
	}
	switch x := t.(type) {
	case *types.TypeParam, *types.Alias:
		return false
	case *types.Basic:
		return x.Kind() != types.UnsafePointer
	case *types.Pointer:
		return plainType(x.Elem(), depth+1)
	case *types.Slice:
		return plainType(x.Elem(), depth+1)
	case *types.Array:
		return plainType(x.Elem(), depth+1)
	case *types.Chan:
		return plainType(x.Elem(), depth+1)
	case *types.Map:
		return plainType(x.Key(), depth+1) && plainType(x.Elem(), depth+1)
	case *types.Named:
		if x.TypeParams().Len() > 0 && x.TypeArgs().Len() == 0 {
			return false // the generic type itself
		}
		for i := 0; i < x.TypeArgs().Len(); i++ {
			if !plainType(x.TypeArgs().At(i), depth+1) {
				return false
			}
		}
		return true
	case *types.Signature:
		return plainTuple(x.Params(), depth) && plainTuple(x.Results(), depth)
	case *types.Struct:
		for i := 0; i < x.NumFields(); i++ {
			if !plainType(x.Field(i).Type(), depth+1) {
				return false
			}
		}
		return true
	case *types.Interface:
		return true
	}
	return false
}

func plainTuple(t *types.Tuple, depth int) bool {
	for i := 0; i < t.Len(); i++ {
		if !plainType(t.At(i).Type(), depth+1) {
			return false
		}
	}
	return true
}
