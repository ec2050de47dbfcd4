package instrument_test

import (
	"bytes"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/memorder/wafl/instrument"
	"github.com/memorder/wafl/instrument/sites"
)

// A check inside a critical section is not hoisted (its delay comes after
// the check): the site table records the lock it is made under as Held,
// while a delete under the same lock is guarded and hoisted as before.
// fsnotify v1.7.0's removePath, whose lookup and deletes are one section.
func TestHeldChecks(t *testing.T) {
	tmp := t.TempDir()
	writeFile(t, filepath.Join(tmp, "go.mod"), "module example.com/held\n\ngo 1.22\n")
	writeFile(t, filepath.Join(tmp, "w.go"), `package held

import "sync"

type watch struct{ path string }

type W struct {
	mu   sync.Mutex
	wd   map[int]*watch
	path map[string]int
	done chan struct{}
}

func (w *W) removePath(path string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	wd, ok := w.path[path]
	if !ok {
		return false
	}
	delete(w.wd, wd)
	return true
}

func (w *W) Close() {
	select {
	case <-w.done:
		return
	default:
	}
	close(w.done)
}
`)
	writeFile(t, filepath.Join(tmp, "w_test.go"), "package held\n\nimport \"testing\"\n\nfunc TestX(t *testing.T) {}\n")
	units := loadUnits(t, tmp)
	alloc := &instrument.SiteAlloc{}
	var src []byte
	for _, u := range units {
		rw, err := instrument.RewritePackage(u, alloc)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range rw.Files {
			if filepath.Base(f.Path) == "w.go" {
				src = f.Src
			}
		}
	}
	var lookup, del, sel *sites.Site
	for _, s := range alloc.Sites() {
		switch {
		case s.Kind == "check" && s.Expr == "w.path[path]":
			lookup = &s
		case s.Kind == "delete":
			del = &s
		case s.Kind == "check" && s.Expr == "w.done":
			sel = &s
		}
	}
	if lookup == nil || del == nil || sel == nil {
		t.Fatalf("sites: lookup %v, delete %v, select %v", lookup, del, sel)
	}
	if lookup.Guard != nil || lookup.Held == nil || lookup.Held.Call != "w.mu.Lock()" || lookup.Held.Line != 15 {
		t.Errorf("lookup: guard %+v, held %+v", lookup.Guard, lookup.Held)
	}
	if del.Guard == nil || *del.Guard != *lookup.Held || del.Held != nil {
		t.Errorf("delete: guard %+v, held %+v (the lookup's %+v)", del.Guard, del.Held, lookup.Held)
	}
	if sel.Held != nil || sel.Guard != nil {
		t.Errorf("select outside a section: guard %+v, held %+v", sel.Guard, sel.Held)
	}
	hoist := func(id uint32) bool {
		return bytes.Contains(src, []byte("_waflHoist("+strconv.FormatUint(uint64(id), 10)+","))
	}
	if hoist(lookup.ID) || !hoist(del.ID) {
		t.Errorf("hoisted: lookup %v (want false), delete %v (want true)\n%s", hoist(lookup.ID), hoist(del.ID), src)
	}
}
