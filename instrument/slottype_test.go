package instrument

import (
	"go/types"
	"testing"
)

func TestSlotTypeString(t *testing.T) {
	sync := types.NewPackage("sync", "sync")
	wg := types.NewNamed(types.NewTypeName(0, sync, "WaitGroup", nil), types.NewStruct(nil, nil), nil)
	m := types.NewPackage("example.com/m", "m")
	tp := types.NewTypeParam(types.NewTypeName(0, m, "T", nil), types.NewInterfaceType(nil, nil))
	node := types.NewNamed(types.NewTypeName(0, m, "node", nil), types.NewStruct(nil, nil), nil)
	alias := types.NewAlias(types.NewTypeName(0, m, "P", nil), types.NewPointer(node))
	for _, c := range []struct {
		kind string
		t    types.Type
		want string
	}{
		{"close", types.NewChan(types.SendOnly, types.NewStruct(nil, nil)), "chan struct{}"},
		{"send", types.NewChan(types.SendRecv, types.NewStruct(nil, nil)), "chan struct{}"},
		{"use", types.NewPointer(node), "*example.com/m.node"},
		{"wg-add", types.NewPointer(wg), "sync.WaitGroup"},
		{"wg-done", wg, "sync.WaitGroup"},
		{"use", types.NewPointer(wg), "*sync.WaitGroup"},
		{"use", types.NewPointer(tp), ""},
		{"use", alias, ""},
		{"atomic-load", types.NewPointer(types.Typ[types.UnsafePointer]), ""},
		{"store", types.NewMap(types.Typ[types.String], types.NewSlice(types.NewPointer(node))), "map[string][]*example.com/m.node"},
		{"use", nil, ""},
	} {
		if got := slotTypeString(c.kind, c.t); got != c.want {
			t.Errorf("slotTypeString(%s, %v) = %q, want %q", c.kind, c.t, got, c.want)
		}
	}
}
