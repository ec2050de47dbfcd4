package vet_test

import (
	"testing"

	"golang.org/x/tools/go/analysis/analysistest"

	"github.com/memorder/wafl/internal/vet"
)

// TestAnalyzer runs the analyzer on small packages, one per kind, each
// case with a twin that an order the analyzer proves keeps silent.
func TestAnalyzer(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), vet.Analyzer, "ubi", "uad", "cta", "wg", "entry", "prec")
}

// TestSuggestedFixes checks the mechanical fix: the Add (or the init)
// moves before the adjacent statement that starts the goroutine.
func TestSuggestedFixes(t *testing.T) {
	analysistest.RunWithSuggestedFixes(t, analysistest.TestData(), vet.Analyzer, "wg")
}
