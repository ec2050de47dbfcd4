package analyze

import "github.com/memorder/wafl/abi"

// dropAliased removes the use-before-init and use-after-dispose pairs
// whose two sites have different slot types (Options.SlotTypes, from the
// site table's "type" field): the trace keys objects by address, and when
// the garbage collector frees one object and the allocator puts another
// at its address (a channel of one pool closed long after another pool's
// channel of another type was sent on there) the two lifetimes look like
// one object. Two live slots of different static types never share an
// address, so such a pair is address reuse, not a race. Sites of unknown
// type ("") pair with anything. Returns the number of pairs dropped.
func (a *analysis) dropAliased(slotTypes map[uint32]string) int {
	if len(slotTypes) == 0 {
		return 0
	}
	n := 0
	for k := range a.pairs {
		if k.kind != abi.OpInit && k.kind != abi.OpUse {
			continue
		}
		t1, t2 := slotTypes[k.first], slotTypes[k.second]
		if t1 != "" && t2 != "" && t1 != t2 {
			delete(a.pairs, k)
			n++
		}
	}
	return n
}
