package sites

import (
	"encoding/binary"
	"hash/fnv"

	"github.com/memorder/wafl/abi"
)

// MaxID is the largest site id, the event format's (abi.MaxSite).
const MaxID = abi.MaxSite

// ID returns the id of the site of the given kind whose slot expression
// expr starts at line:col of file (a base name) in package pkg (an import
// path); ordinal numbers the sites that agree on all of these, in source
// order. The id depends on nothing else: not on the other packages of the
// build, not on the module's location, so a narrower or wider package
// pattern gives every site the same id and a package's test binary the same
// bytes. Ids are never 0 ("no site").
func ID(pkg, file string, line, col int, kind, expr string, ordinal int) uint32 {
	h := fnv.New64a()
	var num [8]byte
	for _, s := range []string{pkg, file, kind, expr} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	for _, n := range []int{line, col, ordinal} {
		binary.LittleEndian.PutUint64(num[:], uint64(n))
		h.Write(num[:])
	}
	x := h.Sum64()
	id := uint32((x ^ x>>32) & MaxID)
	if id == 0 {
		id = 1
	}
	return id
}

// NextID is the id tried after id when id is taken in a build.
func NextID(id uint32) uint32 {
	if id >= MaxID {
		return 1
	}
	return id + 1
}
