package inject

import (
	"os"
	"strings"
	"testing"

	"github.com/memorder/wafl/abi"
	"github.com/memorder/wafl/plans"
)

const maxSiteID = abi.MaxSite

// sparseID is a scattered 30-bit site id, as instrument/sites.ID makes.
func sparseID(i int) uint32 { return uint32(i+1)*2654435761&maxSiteID | 1 }

func TestSiteTableSparse(t *testing.T) {
	m := map[uint32]*loc{}
	for i := range 100 {
		id := sparseID(i)
		m[id] = &loc{site: id}
	}
	m[maxSiteID] = &loc{site: maxSiteID}
	m[1] = &loc{site: 1}
	tab := newSiteTable(m)
	for id, l := range m {
		if got := tab.find(id); got != l {
			t.Errorf("find(%d) = %p, want %p", id, got, l)
		}
	}
	for _, id := range []uint32{0, 2, maxSiteID - 1, sparseID(1000)} {
		if got := tab.find(id); got != nil {
			t.Errorf("find(%d) = %p, want nil", id, got)
		}
	}
	var empty siteTable
	if empty.find(5) != nil {
		t.Error("empty table found a site")
	}
	if n := testing.AllocsPerRun(100, func() { tab.find(12345) }); n != 0 {
		t.Errorf("find allocates %v times", n)
	}
}

func TestCheckBinary(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	self, err := abi.HashFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	p := &plans.Plan{}
	if err := checkBinary(p, "p.json"); err != nil {
		t.Errorf("plan without a hash refused: %v", err)
	}
	p.Provenance.BinaryHash = self
	if err := checkBinary(p, "p.json"); err != nil {
		t.Errorf("plan for this binary refused: %v", err)
	}
	p.Provenance.BinaryHash = "sha256:0000000000000000000000"
	p.Provenance.Package = "example.com/p"
	err = checkBinary(p, "p.json")
	if err == nil || !strings.Contains(err.Error(), "another build of example.com/p") || !strings.Contains(err.Error(), "p.json") {
		t.Errorf("plan for another binary: error %v", err)
	}
}

// A plan copy that carries the executable's own stamp is taken without
// hashing (a wrong hash then goes unseen: the stamp vouches for it); a
// stamp of another file is no such voucher.
func TestCheckBinaryStamp(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	st, ok := abi.StampOf(exe)
	if !ok {
		t.Skip("no file stamps on this system")
	}
	p := &plans.Plan{}
	p.Provenance.BinaryHash = "sha256:0000000000000000000000"
	p.Provenance.BinaryStamp = &st
	if err := checkBinary(p, "p.json"); err != nil {
		t.Errorf("plan with this binary's stamp refused: %v", err)
	}
	other := st
	other.CtimeNs++
	p.Provenance.BinaryStamp = &other
	if err := checkBinary(p, "p.json"); err == nil {
		t.Error("plan with another stamp and another binary's hash accepted")
	}
}
