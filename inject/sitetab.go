package inject

// siteTable is the lookup At makes on every instrumented access: site id
// to state, for the sites the plan mentions. Site ids are sparse 30-bit
// hashes (instrument/sites.ID), so it is an open-addressing table of
// power-of-two size, at most half full, built once by newEngine and only
// read afterwards: no lock, no allocation, one multiply and usually one
// probe.
type siteTable struct {
	keys []uint32 // 0 = empty slot
	vals []*loc
	mask uint32
}

func newSiteTable(m map[uint32]*loc) siteTable {
	if len(m) == 0 {
		return siteTable{}
	}
	n := 8
	for n < 2*len(m) {
		n *= 2
	}
	t := siteTable{keys: make([]uint32, n), vals: make([]*loc, n), mask: uint32(n - 1)}
	for site, l := range m {
		i := slotOf(site) & t.mask
		for t.keys[i] != 0 {
			i = (i + 1) & t.mask
		}
		t.keys[i], t.vals[i] = site, l
	}
	return t
}

func slotOf(site uint32) uint32 { return (site * 0x9E3779B1) >> 7 }

// find returns the state of site, or nil.
func (t *siteTable) find(site uint32) *loc {
	if len(t.keys) == 0 || site == 0 {
		return nil
	}
	i := slotOf(site) & t.mask
	for {
		k := t.keys[i&t.mask]
		if k == site {
			return t.vals[i&t.mask]
		}
		if k == 0 {
			return nil
		}
		i++
	}
}
