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
	if got, ex := parseList(out, nil); !slices.Equal(got, []string{"Test", "TestA", "TestB"}) || ex != 1 {
		t.Errorf("parseList = %q, %d examples; want [Test TestA TestB], 1", got, ex)
	}
	if got, ex := parseList(out, regexp.MustCompile("^(TestA|ExampleA)$")); !slices.Equal(got, []string{"Test", "TestB"}) || ex != 0 {
		t.Errorf("parseList with skip = %q, %d examples; want [Test TestB], 0", got, ex)
	}
}
