package main

import (
	"slices"
	"strings"
	"testing"
)

func TestTranslateGoTestFlags(t *testing.T) {
	for _, c := range []struct {
		in, want []string
		err      string
	}{
		{in: []string{"detect", "-count", "2", "./..."}, want: []string{"detect", "--runs=2", "./..."}},
		{in: []string{"detect", "-count=3", "-short", "-cpu", "1,2", "./..."}, want: []string{"detect", "--runs=3", "--short", "--cpu", "1,2", "./..."}},
		{in: []string{"prepare", "-run", "TestX", "-timeout=1m", "-v", "-p", "2"}, want: []string{"prepare", "--run", "TestX", "--timeout=1m", "-v", "-p", "2"}},
		{in: []string{"reproduce", "-n", "5", "r.json"}, want: []string{"reproduce", "-n", "5", "r.json"}},
		{in: []string{"detect", "-test.short", "--", "-race"}, want: []string{"detect", "--short", "--", "-race"}},
		{in: []string{"prepare", "-count", "2"}, err: "not supported: -count"},
		{in: []string{"detect", "-race", "./..."}, err: "not supported: -race (wafl builds its own"},
		{in: []string{"detect", "-coverprofile=c.out"}, err: "not supported: -coverprofile"},
	} {
		got, err := translateGoTestFlags(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: error %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%q: got %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}
