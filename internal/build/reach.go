package build

import (
	"context"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/memorder/wafl/instrument/sites"
	"github.com/memorder/wafl/internal/reach"
)

// The reach files (internal/reach): for every package under test, the
// instrumented sites its tests and the goroutines they start may reach, a
// file beside the package's site table. They are computed from the
// loaded syntax while the go command builds the binaries, and written
// once the binaries are there; a package whose reach cannot be computed
// gets no file (the analysis then makes no static pairs and does not
// scope its predicted ones).

// reachJob is the computation running beside the build.
type reachJob struct {
	done  chan struct{}
	files map[string]*reach.File // import path -> reach file
	err   error
	took  time.Duration
}

// startReach starts computing the reach files of the units under test
// from the loaded packages and the build's site table.
func (b *builder) startReach(ctx context.Context, units []*unit, table []sites.Site) *reachJob {
	j := &reachJob{done: make(chan struct{}), files: map[string]*reach.File{}}
	var paths []string
	pkgs := slices.Clone(b.loaded)
	for _, u := range units {
		if u.foreign && u.src != nil {
			pkgs = append(pkgs, u.src)
		}
		if !u.dep && u.pkg.Err == nil {
			paths = append(paths, u.pkg.ImportPath)
		}
	}
	table = slices.Clone(table)
	go func() {
		defer close(j.done)
		start := time.Now()
		defer func() { j.took = time.Since(start) }()
		prog, err := reach.New(pkgs, table, reach.Options{})
		if err != nil {
			j.err = err
			return
		}
		for _, path := range paths {
			if ctx.Err() != nil {
				return
			}
			f, err := prog.File(path)
			if err != nil {
				j.err = err
				continue
			}
			j.files[path] = f
		}
	}()
	return j
}

// writeReach waits for the reach files and writes each beside its
// package's site table. It returns the computation's time and how long
// the build waited for it.
func (b *builder) writeReach(j *reachJob, units []*unit) (took, wait time.Duration) {
	t := time.Now()
	<-j.done
	wait = time.Since(t)
	if j.err != nil {
		fmt.Fprintf(b.log, "wafl: static reach: %v (no static pairs for the packages concerned)\n", j.err)
	}
	for _, u := range units {
		if u.dep || u.pkg.Sites == "" {
			continue
		}
		path := reach.PathFor(u.pkg.Sites)
		f := j.files[u.pkg.ImportPath]
		if f == nil {
			os.Remove(path)
			continue
		}
		if err := f.Save(path); err != nil {
			fmt.Fprintf(b.log, "wafl: %s: %v\n", u.pkg.ImportPath, err)
			os.Remove(path)
		}
	}
	return j.took, wait
}
