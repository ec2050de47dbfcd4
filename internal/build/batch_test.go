package build

import "testing"

func TestTestBinaryName(t *testing.T) {
	for path, want := range map[string]string{
		"example.com/m":               "m.test",
		"example.com/m/sub":           "sub.test",
		"github.com/a/ants/v2":        "ants.test",
		"example.com/m/v1":            "v1.test",
		"example.com/m/v0":            "v0.test",
		"example.com/m/v10":           "m.test",
		"example.com/m/v2x":           "v2x.test",
		"v2":                          "v2.test",
		"golang.org/x/sync/semaphore": "semaphore.test",
	} {
		if got := testBinaryName(path); got != want {
			t.Errorf("testBinaryName(%q) = %q, want %q", path, got, want)
		}
	}
}
