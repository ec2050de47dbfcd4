package report

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParseCrash: any bytes parse without panicking, and a parsed crash
// is self-consistent.
func FuzzParseCrash(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "crash", "*.txt"))
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("panic: x\n\ngoroutine 1 [running]:\nmain.main()\n\t/a.go:1 +0x1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c := ParseCrash(data)
		if c == nil {
			return
		}
		if len(c.Goroutines) == 0 || c.Goroutine != c.Goroutines[0].ID || c.Panicking() == nil {
			t.Fatalf("crash without its panicking goroutine: %+v", c)
		}
		if c.Kind.Memorder() && c.Fatal {
			t.Fatalf("fatal error classified as MEMORDER: %+v", c)
		}
	})
}

// FuzzParseLog: any bytes parse without panicking or error (bad lines are
// counted, not fatal).
func FuzzParseLog(f *testing.F) {
	f.Add([]byte(`{"ev":"setup","t":0,"run":1,"seed":2}
{"ev":"delay","t":1,"id":1,"site":3,"g":4,"ns":5}
{"ev":"end","t":6,"id":1,"site":3,"g":4,"ns":5,"p":0.9}
{"ev":"reorder","t":2,"first":3,"second":4,"id":1,"g":9,"delay_g":4,"obj":77}
{"ev":"finish","t":7,"delays":1}
`))
	f.Add([]byte(`{"ev":"end","id":42}` + "\n" + `{"ev":"delay","id":1`))
	f.Fuzz(func(t *testing.T, data []byte) {
		lg, err := ParseLog(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("ParseLog: %v", err)
		}
		for _, d := range lg.Delays {
			if lg.Delay(d.ID) == nil {
				t.Fatalf("delay %d not indexed", d.ID)
			}
		}
	})
}
