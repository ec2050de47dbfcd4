package golangci_test

import (
	"testing"

	"github.com/golangci/plugin-module-register/register"
	"golang.org/x/tools/go/analysis/analysistest"

	"github.com/memorder/wafl/golangci"
)

// TestPlugin looks the plugin up the way golangci-lint does (by the name
// in .golangci.yml), builds its analyzers and runs them on a package with
// a use-before-init.
func TestPlugin(t *testing.T) {
	newPlugin, err := register.GetPlugin(golangci.Name)
	if err != nil {
		t.Fatal(err)
	}
	p, err := newPlugin(nil)
	if err != nil {
		t.Fatal(err)
	}
	if mode := p.GetLoadMode(); mode != register.LoadModeTypesInfo {
		t.Errorf("load mode %q, want %q", mode, register.LoadModeTypesInfo)
	}
	as, err := p.BuildAnalyzers()
	if err != nil {
		t.Fatal(err)
	}
	if len(as) != 1 || as[0].Name != golangci.Name {
		t.Fatalf("analyzers %v, want one named %s", as, golangci.Name)
	}
	analysistest.Run(t, analysistest.TestData(), as[0], "startloop")
}

// TestSettings: an empty settings map is fine, an unknown option is an
// error.
func TestSettings(t *testing.T) {
	if _, err := golangci.New(map[string]any{}); err != nil {
		t.Errorf("empty settings: %v", err)
	}
	if _, err := golangci.New(map[string]any{"strict": true}); err == nil {
		t.Error("unknown setting accepted")
	}
}
