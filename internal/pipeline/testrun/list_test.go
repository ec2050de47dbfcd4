package testrun

import (
	"regexp"
	"slices"
	"testing"
)

func TestParseTestListOnceEachSkipped(t *testing.T) {
	// go test's -test.list output for a package whose internal and
	// external test packages both declare Test (grpc-go's root).
	out := []byte("Test\nTestA\nExampleA\nTest\nBenchmarkX\nTestB\n\n")
	if got, want := parseList(out, nil), []string{"Test", "TestA", "TestB"}; !slices.Equal(got, want) {
		t.Errorf("parseList = %q, want %q", got, want)
	}
	if got, want := parseList(out, regexp.MustCompile("^TestA$")), []string{"Test", "TestB"}; !slices.Equal(got, want) {
		t.Errorf("parseList with skip = %q, want %q", got, want)
	}
}
