package sites

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestSaveLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.sites.json")
	tab := &Table{Package: "example.com/p", Sites: []Site{
		{ID: 1, Kind: "use", File: "/src/p.go", Line: 3, Col: 2, Expr: "s.conf", Func: "(*S).Run"},
		{ID: 2, Kind: "load", File: "/src/p.go", Line: 4, Col: 2, Expr: "s.conf", Func: "(*S).Close",
			Derefs: []Ref{{File: "/src/p.go", Line: 6}}},
	}}
	if err := tab.Save(path); err != nil {
		t.Fatal(err)
	}
	got, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.Package != tab.Package || len(got.Sites) != 2 || !reflect.DeepEqual(got.Sites[1], tab.Sites[1]) {
		t.Fatalf("round trip: %+v", got)
	}
	if s, ok := got.Lookup(2); !ok || s.Kind != "load" {
		t.Errorf("Lookup(2) = %+v, %v", s, ok)
	}
	for _, id := range []uint32{0, 3} {
		if _, ok := got.Lookup(id); ok {
			t.Errorf("Lookup(%d) found a site", id)
		}
	}
}

func TestLoadRejects(t *testing.T) {
	dir := t.TempDir()
	for name, data := range map[string]string{
		"zero":    `{"version":1,"sites":[{"id":0}]}`,
		"dup":     `{"version":1,"sites":[{"id":7},{"id":7}]}`,
		"big":     `{"version":1,"sites":[{"id":1073741824}]}`,
		"version": `{"version":99,"sites":[]}`,
		"json":    `{"version":`,
	} {
		path := filepath.Join(dir, name+".json")
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Load(path)
		if err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: error %v, want one naming %s", name, err, path)
		}
	}
}

func TestIDStable(t *testing.T) {
	a := ID("example.com/p", "p.go", 10, 3, "use", "s.conf", 0)
	if a == 0 || a > MaxID {
		t.Fatalf("id %d out of range", a)
	}
	if b := ID("example.com/p", "p.go", 10, 3, "use", "s.conf", 0); b != a {
		t.Errorf("same site, ids %d and %d", a, b)
	}
	for name, b := range map[string]uint32{
		"package": ID("example.com/q", "p.go", 10, 3, "use", "s.conf", 0),
		"file":    ID("example.com/p", "q.go", 10, 3, "use", "s.conf", 0),
		"line":    ID("example.com/p", "p.go", 11, 3, "use", "s.conf", 0),
		"col":     ID("example.com/p", "p.go", 10, 4, "use", "s.conf", 0),
		"kind":    ID("example.com/p", "p.go", 10, 3, "close", "s.conf", 0),
		"expr":    ID("example.com/p", "p.go", 10, 3, "use", "s.conf.x", 0),
		"ordinal": ID("example.com/p", "p.go", 10, 3, "use", "s.conf", 1),
	} {
		if b == a {
			t.Errorf("a different %s gives the same id %d", name, a)
		}
	}
	if NextID(MaxID) != 1 || NextID(5) != 6 {
		t.Errorf("NextID wraps wrong")
	}
}

func TestLookupSparse(t *testing.T) {
	tab := &Table{Sites: []Site{{ID: 900000, Kind: "use"}, {ID: 17, Kind: "close"}}}
	for _, indexed := range []bool{false, true} {
		if indexed {
			if err := tab.Index(); err != nil {
				t.Fatal(err)
			}
		}
		if s, ok := tab.Lookup(17); !ok || s.Kind != "close" {
			t.Errorf("indexed=%v: Lookup(17) = %+v, %v", indexed, s, ok)
		}
		if _, ok := tab.Lookup(18); ok {
			t.Errorf("indexed=%v: Lookup(18) found a site", indexed)
		}
	}
}
