// Package golangci registers wafl's MEMORDER analyzer (memorder, the
// analyzer of `wafl vet`) as a golangci-lint module plugin. Build a
// golangci-lint binary that holds it with `golangci-lint custom` and a
// .custom-gcl.yml naming this package:
//
//	version: v2.15.0  # the golangci-lint version to build (the one tested)
//	plugins:
//	  - module: github.com/memorder/wafl
//	    import: github.com/memorder/wafl/golangci
//	    version: latest
//
// and enable it in .golangci.yml:
//
//	version: "2"
//	linters:
//	  enable:
//	    - memorder
//	  settings:
//	    custom:
//	      memorder:
//	        type: module
//	        description: goroutine order bugs (use before init, use after dispose, check-then-act)
//
// memorder has no settings; docs/vet.md describes what it reports.
package golangci

import (
	"fmt"

	"github.com/golangci/plugin-module-register/register"
	"golang.org/x/tools/go/analysis"

	"github.com/memorder/wafl/internal/vet"
)

// Name is the linter's name in golangci-lint's configuration.
const Name = "memorder"

func init() { register.Plugin(Name, New) }

// New returns the plugin. memorder takes no settings: any given are an
// error, so a misspelt option does not pass silently.
func New(settings any) (register.LinterPlugin, error) {
	if settings != nil {
		if _, err := register.DecodeSettings[struct{}](settings); err != nil {
			return nil, fmt.Errorf("memorder has no settings: %w", err)
		}
	}
	return plugin{}, nil
}

type plugin struct{}

// BuildAnalyzers returns the analyzer wafl vet runs.
func (plugin) BuildAnalyzers() ([]*analysis.Analyzer, error) {
	return []*analysis.Analyzer{vet.Analyzer}, nil
}

// GetLoadMode asks for type information: the analyzer builds SSA.
func (plugin) GetLoadMode() string { return register.LoadModeTypesInfo }
