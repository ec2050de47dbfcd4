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
		"sparse":  `{"version":1,"sites":[{"id":2}]}`,
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
