package plans

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/memorder/wafl/abi"
)

// Validate checks the plan's internal consistency: the version, the
// parameters, locations sorted by site with probabilities in [0,1], pairs
// that belong to their location with sane gaps, sorted interference sets.
// The error names the offending location and pair.
func (p *Plan) Validate() error {
	if p.Version != Version {
		return fmt.Errorf("plan format version %d, this wafl reads version %d", p.Version, Version)
	}
	if err := p.Params.Validate(); err != nil {
		return fmt.Errorf("params: %w", err)
	}
	for i := range p.Locations {
		l := &p.Locations[i]
		if i > 0 && p.Locations[i-1].Site >= l.Site {
			return fmt.Errorf("location %d (site %d): locations must be sorted by site without duplicates (previous site %d)", i, l.Site, p.Locations[i-1].Site)
		}
		if err := l.validate(); err != nil {
			return fmt.Errorf("location %d (site %d): %w", i, l.Site, err)
		}
	}
	for i, b := range p.Bugs {
		if !b.Kind.Known() {
			return fmt.Errorf("bug %d: unknown kind %q", i, b.Kind)
		}
		if b.Delayed == 0 {
			return fmt.Errorf("bug %d: delayed site is 0", i)
		}
	}
	return nil
}

func (l *Location) validate() error {
	switch {
	case l.Site == 0:
		return errors.New("site 0 is not a site")
	case !(l.Prob >= 0 && l.Prob <= 1):
		return fmt.Errorf("prob must be in [0,1], got %v", l.Prob)
	case l.DelayNs < 0:
		return fmt.Errorf("delay_ns must be ≥ 0, got %d", l.DelayNs)
	case l.MaxGapNs < 0:
		return fmt.Errorf("max_gap_ns must be ≥ 0, got %d", l.MaxGapNs)
	case l.Delays < 0:
		return fmt.Errorf("delays must be ≥ 0, got %d", l.Delays)
	case len(l.Pairs) == 0:
		return errors.New("no pairs")
	}
	for j, pr := range l.Pairs {
		if err := pr.validate(l.Site); err != nil {
			return fmt.Errorf("pair %d (%d→%d): %w", j, pr.First, pr.Second, err)
		}
		if j > 0 && !pairLess(&l.Pairs[j-1], &l.Pairs[j]) {
			return fmt.Errorf("pair %d (%d→%d): pairs must be sorted by (second, kind) without duplicates", j, pr.First, pr.Second)
		}
	}
	for j, s := range l.Interference {
		if s == 0 {
			return fmt.Errorf("interference[%d]: site 0 is not a site", j)
		}
		if j > 0 && l.Interference[j-1] >= s {
			return fmt.Errorf("interference[%d]: sites must be sorted without duplicates", j)
		}
	}
	return nil
}

func (pr *Pair) validate(site uint32) error {
	switch {
	case !pr.Kind.Known():
		return fmt.Errorf("unknown kind %q", pr.Kind)
	case pr.First != site:
		return fmt.Errorf("first is %d, want the location's site %d", pr.First, site)
	case pr.Second == 0:
		return errors.New("second site is 0")
	case pr.Count < 1:
		return fmt.Errorf("count must be ≥ 1, got %d", pr.Count)
	case pr.MinGapNs < 0 || pr.MaxGapNs < pr.MinGapNs:
		return fmt.Errorf("gaps must satisfy 0 ≤ min_gap_ns ≤ max_gap_ns, got %d, %d", pr.MinGapNs, pr.MaxGapNs)
	}
	return nil
}

func pairLess(a, b *Pair) bool {
	if a.Second != b.Second {
		return a.Second < b.Second
	}
	return a.Kind < b.Kind
}

// Parse decodes and validates a plan. name is used in errors (usually the
// file path).
func Parse(data []byte, name string) (*Plan, error) {
	var p Plan
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("plan %s: %w", name, jsonError(data, err))
	}
	if dec.More() {
		return nil, fmt.Errorf("plan %s: trailing data after the JSON object", name)
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("plan %s: %w", name, err)
	}
	return &p, nil
}

// jsonError adds the line number to JSON syntax and type errors.
func jsonError(data []byte, err error) error {
	var off int64 = -1
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	}
	if off < 0 || off > int64(len(data)) {
		return err
	}
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	return fmt.Errorf("line %d: %w", line, err)
}

// Load reads and validates the plan file at path.
func Load(path string) (*Plan, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	return Parse(data, path)
}

// Marshal encodes the plan as indented JSON with a trailing newline.
func (p *Plan) Marshal() ([]byte, error) {
	data, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}

// Save validates the plan and writes it to path, in place: the file is
// truncated and the plan written with one write call. A save makes no
// new file and removes none once the plan exists: on a file system that
// scans recently freed inodes when it allocates one (ext4 without a
// journal), a temporary file renamed over the plan would free an inode
// at every save, and plans are saved after every run, so every later
// file creation of wafl and of the test processes would pay for it. A
// wafl killed during the call, or a reader that reads meanwhile, can
// find the file empty or cut short, which no longer parses as a plan
// (Load fails; an unreadable plan is prepared again), never a mix of
// two plans. It does not sync, for the same reason: a lost plan is
// rebuilt from its test.
func Save(path string, p *Plan) error {
	if err := p.Validate(); err != nil {
		return fmt.Errorf("plan %s: refusing to save an invalid plan: %w", path, err)
	}
	data, err := p.Marshal()
	if err != nil {
		return fmt.Errorf("plan %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("plan %s: %w", path, err)
	}
	_, werr := f.Write(data)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("plan %s: %w", path, werr)
	}
	return nil
}

// Location returns the location of site, or nil.
func (p *Plan) Location(site uint32) *Location {
	i, ok := slices.BinarySearchFunc(p.Locations, site, func(l Location, s uint32) int {
		return cmp.Compare(l.Site, s)
	})
	if !ok {
		return nil
	}
	return &p.Locations[i]
}

// Live reports whether the location is still in S: its probability is
// positive and at least one of its pairs is not pruned.
func (l *Location) Live() bool {
	if l.Prob <= 0 {
		return false
	}
	for i := range l.Pairs {
		if l.Pairs[i].Pruned == "" {
			return true
		}
	}
	return false
}

// Empty reports whether no location is active: detection runs have
// nothing left to do.
func (p *Plan) Empty() bool {
	for i := range p.Locations {
		if p.Locations[i].Live() {
			return false
		}
	}
	return true
}

// Recompute sets every location's MaxGapNs to the largest gap of its pairs
// and its DelayNs from the plan's parameters.
func (p *Plan) Recompute() {
	for i := range p.Locations {
		l := &p.Locations[i]
		var g int64
		for _, pr := range l.Pairs {
			g = max(g, pr.MaxGapNs)
		}
		l.MaxGapNs = g
		l.DelayNs = p.Params.Delay(g)
	}
}

// Merge combines two plans of the same test, e.g. from several preparation
// runs, into a new plan: the union of the pairs (counts added, the smaller
// minimum and larger maximum gap, a pair pruned in either plan stays
// pruned), the union of interference sets, the larger probability of each
// location, delays recomputed from a's parameters and the merged gaps, the
// runs of a then b and the union of the bugs. Provenance is a's, with
// Events added and b's trace listed in Merged. Neither input is modified.
func Merge(a, b *Plan) (*Plan, error) {
	if a.Version != b.Version {
		return nil, fmt.Errorf("merge plans: format versions differ (%d, %d)", a.Version, b.Version)
	}
	if a.Provenance.Package != b.Provenance.Package || a.Provenance.Test != b.Provenance.Test {
		return nil, fmt.Errorf("merge plans: different tests (%s %s and %s %s)",
			a.Provenance.Package, a.Provenance.Test, b.Provenance.Package, b.Provenance.Test)
	}
	if a.Params.NearMissNs != b.Params.NearMissNs {
		return nil, fmt.Errorf("merge plans: near-miss windows differ (%d ns, %d ns); candidate sets built with different δ do not combine",
			a.Params.NearMissNs, b.Params.NearMissNs)
	}
	out := &Plan{
		Version:    a.Version,
		Params:     a.Params,
		Provenance: a.Provenance,
	}
	out.Provenance.Events += b.Provenance.Events
	out.Provenance.Thinned += b.Provenance.Thinned
	if a.Provenance.Forks != nil && b.Provenance.Forks != nil {
		n := *a.Provenance.Forks + *b.Provenance.Forks
		out.Provenance.Forks = &n
	} else {
		out.Provenance.Forks = nil
	}
	if a.Provenance.Late != nil && b.Provenance.Late != nil {
		n := *a.Provenance.Late + *b.Provenance.Late
		out.Provenance.Late = &n
	} else {
		out.Provenance.Late = nil
	}
	out.Provenance.Truncated = a.Provenance.Truncated || b.Provenance.Truncated
	out.Provenance.Merged = append(slices.Clone(a.Provenance.Merged), b.Provenance.Merged...)
	if b.Provenance.Trace != "" {
		out.Provenance.Merged = append(out.Provenance.Merged, b.Provenance.Trace)
	}
	i, j := 0, 0
	for i < len(a.Locations) || j < len(b.Locations) {
		switch {
		case j == len(b.Locations) || (i < len(a.Locations) && a.Locations[i].Site < b.Locations[j].Site):
			out.Locations = append(out.Locations, cloneLocation(&a.Locations[i]))
			i++
		case i == len(a.Locations) || b.Locations[j].Site < a.Locations[i].Site:
			out.Locations = append(out.Locations, cloneLocation(&b.Locations[j]))
			j++
		default:
			out.Locations = append(out.Locations, mergeLocation(&a.Locations[i], &b.Locations[j]))
			i++
			j++
		}
	}
	out.Recompute()
	out.Runs = append(slices.Clone(a.Runs), b.Runs...)
	out.Bugs = slices.Clone(a.Bugs)
	for _, bug := range b.Bugs {
		if !slices.ContainsFunc(out.Bugs, func(o Bug) bool {
			return o.Kind == bug.Kind && o.Delayed == bug.Delayed && o.Failing == bug.Failing
		}) {
			out.Bugs = append(out.Bugs, bug)
		}
	}
	return out, nil
}

func cloneLocation(l *Location) Location {
	c := *l
	c.Pairs = slices.Clone(l.Pairs)
	c.Interference = slices.Clone(l.Interference)
	return c
}

func mergeLocation(a, b *Location) Location {
	out := Location{
		Site:   a.Site,
		Prob:   max(a.Prob, b.Prob),
		Delays: a.Delays + b.Delays,
	}
	i, j := 0, 0
	for i < len(a.Pairs) || j < len(b.Pairs) {
		switch {
		case j == len(b.Pairs) || (i < len(a.Pairs) && pairLess(&a.Pairs[i], &b.Pairs[j])):
			out.Pairs = append(out.Pairs, a.Pairs[i])
			i++
		case i == len(a.Pairs) || pairLess(&b.Pairs[j], &a.Pairs[i]):
			out.Pairs = append(out.Pairs, b.Pairs[j])
			j++
		default:
			pa, pb := a.Pairs[i], b.Pairs[j]
			m := pa
			m.Count += pb.Count
			m.MinGapNs = min(pa.MinGapNs, pb.MinGapNs)
			m.MaxGapNs = max(pa.MaxGapNs, pb.MaxGapNs)
			m.Follows = max(pa.Follows, pb.Follows)
			m.NoWait = pa.NoWait || pb.NoWait
			if m.Pruned == "" {
				m.Pruned = pb.Pruned
			}
			out.Pairs = append(out.Pairs, m)
			i++
			j++
		}
	}
	out.Interference = append(slices.Clone(a.Interference), b.Interference...)
	slices.Sort(out.Interference)
	out.Interference = slices.Compact(out.Interference)
	return out
}

// String summarizes the plan in one line, for logs.
func (p *Plan) String() string {
	var b strings.Builder
	pairs, live := 0, 0
	for i := range p.Locations {
		pairs += len(p.Locations[i].Pairs)
		if p.Locations[i].Live() {
			live++
		}
	}
	fmt.Fprintf(&b, "plan %s %s: %d locations (%d active), %d pairs, %d runs, %d bugs",
		p.Provenance.Package, p.Provenance.Test, len(p.Locations), live, pairs, len(p.Runs), len(p.Bugs))
	return b.String()
}

// The changes the wafl process makes to a plan besides folding in a
// detection run (update.go), learning (learn.go) and the copy one run
// reads (Plan.ForRun): building one from an analysis, recording the build
// it runs in, and renaming its sites for a new build.

// New returns the plan of one analysis: the given parameters and
// provenance, one location per distinct Pair.First of pairs with
// probability 1, its pairs sorted by (second, kind), and the locations'
// gaps and delays computed from params (Recompute). pairs is not
// modified.
func New(params Params, prov Provenance, pairs []Pair) *Plan {
	p := &Plan{Version: Version, Params: params, Provenance: prov}
	sorted := slices.Clone(pairs)
	slices.SortFunc(sorted, func(a, b Pair) int {
		if a.First != b.First {
			return cmp.Compare(a.First, b.First)
		}
		if a.Second != b.Second {
			return cmp.Compare(a.Second, b.Second)
		}
		return strings.Compare(string(a.Kind), string(b.Kind))
	})
	for i := 0; i < len(sorted); {
		j := i + 1
		for j < len(sorted) && sorted[j].First == sorted[i].First {
			j++
		}
		p.Locations = append(p.Locations, Location{Site: sorted[i].First, Prob: 1, Pairs: sorted[i:j:j]})
		i = j
	}
	p.Recompute()
	return p
}

// SetInterference sets the interference set of the location of site to
// sites, sorted and without duplicates (nil when sites is empty). It does
// nothing for a site p has no location for.
func (p *Plan) SetInterference(site uint32, sites []uint32) {
	l := p.Location(site)
	if l == nil {
		return
	}
	if len(sites) == 0 {
		l.Interference = nil
		return
	}
	s := slices.Clone(sites)
	slices.Sort(s)
	l.Interference = slices.Compact(s)
}

// SetBuild records the build the plan's test runs in: the test binary's
// path, its site table's path and the binary's hash (Provenance.Binary,
// Sites and BinaryHash); the stamp of another binary goes.
func (p *Plan) SetBuild(binary, sites, hash string) {
	p.Provenance.Binary, p.Provenance.Sites, p.Provenance.BinaryHash = binary, sites, hash
	p.Provenance.BinaryStamp = nil
}

// SetBinaryStamp records the test binary's file stamp for a detection
// run's copy of the plan (Provenance.BinaryStamp; nil: none).
func (p *Plan) SetBinaryStamp(s *abi.Stamp) { p.Provenance.BinaryStamp = s }

// SetForks records how many goroutines the test started in the run the
// plan was made from (Provenance.Forks).
func (p *Plan) SetForks(n int64) {
	p.Provenance.Forks = &n
}

// SetLate records how many goroutines were late in the run the plan was
// made from (Provenance.Late).
func (p *Plan) SetLate(n int64) {
	p.Provenance.Late = &n
}

// SetDuration records how long the test ran in the preparation run the
// plan was made from (Provenance.DurationNs).
func (p *Plan) SetDuration(d int64) {
	p.Provenance.DurationNs = d
}

// SetStaticLeft records how many static candidate pairs the analysis
// left out of the plan by its cap (Provenance.StaticLeft).
func (p *Plan) SetStaticLeft(n int) {
	p.Provenance.StaticLeft = n
}

// MovePaths rewrites the file paths the provenance records (Binary, Sites
// and Trace) with move, for a plan whose files moved.
func (p *Plan) MovePaths(move func(string) string) {
	pv := &p.Provenance
	pv.Binary, pv.Sites, pv.Trace = move(pv.Binary), move(pv.Sites), move(pv.Trace)
}

// SiteIDs returns every site id p mentions (locations, partners,
// interference sets and bugs), sorted, without 0.
func (p *Plan) SiteIDs() []uint32 {
	var ids []uint32
	for _, l := range p.Locations {
		ids = append(ids, l.Site)
		for _, pr := range l.Pairs {
			ids = append(ids, pr.Second)
		}
		ids = append(ids, l.Interference...)
	}
	for _, b := range p.Bugs {
		ids = append(ids, b.Delayed, b.Failing)
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	if len(ids) > 0 && ids[0] == 0 {
		ids = ids[1:]
	}
	return ids
}

// Remap renames p's sites by m (old id → new id), for a plan made on an
// earlier build of its test: a location, pair, interference entry or bug
// whose site m does not map is dropped (a bug needs its delayed site
// only; an unmapped failing site becomes 0), and a location left without
// pairs goes too. Sort orders are restored; when two old locations map to
// one site, the first is kept.
func (p *Plan) Remap(m map[uint32]uint32) {
	var locs []Location
	for _, l := range p.Locations {
		site, ok := m[l.Site]
		if !ok {
			continue
		}
		l.Site = site
		var pairs []Pair
		for _, pr := range l.Pairs {
			if s, ok := m[pr.Second]; ok {
				pr.First, pr.Second = site, s
				pairs = append(pairs, pr)
			}
		}
		if len(pairs) == 0 {
			continue
		}
		slices.SortFunc(pairs, func(a, b Pair) int {
			if a.Second != b.Second {
				return cmp.Compare(a.Second, b.Second)
			}
			return strings.Compare(string(a.Kind), string(b.Kind))
		})
		l.Pairs = pairs
		var interf []uint32
		for _, s := range l.Interference {
			if t, ok := m[s]; ok {
				interf = append(interf, t)
			}
		}
		slices.Sort(interf)
		l.Interference = slices.Compact(interf)
		locs = append(locs, l)
	}
	slices.SortStableFunc(locs, func(a, b Location) int { return cmp.Compare(a.Site, b.Site) })
	p.Locations = slices.CompactFunc(locs, func(a, b Location) bool { return a.Site == b.Site })
	var bugs []Bug
	for _, b := range p.Bugs {
		if d, ok := m[b.Delayed]; ok {
			b.Delayed, b.Failing = d, m[b.Failing]
			bugs = append(bugs, b)
		}
	}
	p.Bugs = bugs
}
