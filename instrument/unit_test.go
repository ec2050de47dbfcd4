package instrument

import "testing"

func TestFixPositions(t *testing.T) {
	src := "package p\n\nfunc f() {\n\t{\n\t\tx := 1\n\t\t/*WAFLPOS:4:2*/go g(x)\n\t}\n\t/*WAFLPOS:5:2*/h()\n}\n\nfunc /*WAFLPOS:8:6*/k() { /*WAFLPOS:8:12*/\n\ta()\n}\n"
	got := string(fixPositions([]byte(src), "/src/p.go"))
	want := "package p\n\nfunc f() {\n\t{\n\t\tx := 1\n\t\t/*line /src/p.go:4:2*/go g(x)\n\t}\n\t/*line /src/p.go:5:2*/h()\n}\n\nfunc k() {\n\t/*line /src/p.go:8:12*/a()\n}\n"
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	// Markers on unshifted lines disappear.
	src = "package p\n\nfunc f() {\n\t/*WAFLPOS:4:2*/a()\n}\n"
	if got := string(fixPositions([]byte(src), "/src/p.go")); got != "package p\n\nfunc f() {\n\ta()\n}\n" {
		t.Errorf("unshifted: got:\n%s", got)
	}
	// A raw string's lines keep their trailing blanks (miekg/dns's
	// update_test.go expects "ANY\t" at line ends).
	src = "package p\n\nvar s = `a\t\nb \n`\n\nfunc f() {\n\t/*WAFLPOS:8:2*/a()\n}\n"
	if got := string(fixPositions([]byte(src), "/src/p.go")); got != "package p\n\nvar s = `a\t\nb \n`\n\nfunc f() {\n\ta()\n}\n" {
		t.Errorf("raw string: got:\n%q", got)
	}
}

func TestIsTestName(t *testing.T) {
	for name, want := range map[string]bool{"Test": true, "TestX": true, "Test_x": true, "Testing": false, "TestMain": true, "Foo": false} {
		if IsTestName(name) != want {
			t.Errorf("IsTestName(%s) != %v", name, want)
		}
	}
}
