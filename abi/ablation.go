package abi

import (
	"fmt"
	"strings"
)

// Ablation is a set of parts of the algorithm switched off, to measure
// what each contributes (thesis §6.4, Table 6.4). wafl passes it to a
// detection run as EnvAblate, a comma-separated list of part names.
type Ablation uint8

// The parts an Ablation can switch off.
const (
	// AblateInterference: never skip a delay for an interfering delay in
	// progress (thesis §4.4).
	AblateInterference Ablation = 1 << iota
	// AblateHB: no happens-before inference (thesis §4.5).
	AblateHB
	// AblateDecay: delay probabilities never decay (thesis §4.6).
	AblateDecay
	// AblateFixedDelay: every delay is FixedDelayNs, not the learned length.
	AblateFixedDelay
	// AblateParentChild: keep near misses whose accesses fork edges order.
	AblateParentChild
	// AblateBasic: WAFLBASIC, no preparation run; near misses are found
	// and delayed online by the detection run (thesis §4.2).
	AblateBasic
)

// FixedDelayNs is the delay of the fixed-delay ablation (TSVD's and the
// thesis's 100 ms).
const FixedDelayNs = int64(100e6)

// AblationSpec describes one part: its name in EnvAblate and --ablate,
// which phases it changes and what switching it off means.
type AblationSpec struct {
	Part    Ablation
	Name    string
	Prepare bool // it changes the preparation run or its analysis
	Detect  bool // it changes the detection runs
	Doc     string
}

// Ablations is the table of parts, in the order of the constants.
var Ablations = [...]AblationSpec{
	{AblateInterference, "interference", false, true, "never skip a delay for an interfering delay in progress"},
	{AblateHB, "hb", false, true, "no happens-before inference"},
	{AblateDecay, "decay", false, true, "delay probabilities never decay"},
	{AblateFixedDelay, "fixed-delay", false, true, "every delay 100 ms instead of the learned length"},
	{AblateParentChild, "parent-child", true, true, "keep near misses that fork edges order"},
	{AblateBasic, "basic", true, true, "WAFLBASIC: no preparation run, near misses found and delayed online"},
}

// Has reports whether every part of p is in a.
func (a Ablation) Has(p Ablation) bool { return a&p == p }

// String returns the comma-separated part names, as EnvAblate takes them.
func (a Ablation) String() string {
	var parts []string
	for _, s := range Ablations {
		if a.Has(s.Part) {
			parts = append(parts, s.Name)
		}
	}
	return strings.Join(parts, ",")
}

// ParseAblation parses a comma-separated list of part names; spaces and
// empty elements are ignored.
func ParseAblation(s string) (Ablation, error) {
	var a Ablation
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		p, ok := ablationByName(f)
		if !ok {
			return a, fmt.Errorf("unknown part %q (want %s)", f, AblationNames())
		}
		a |= p
	}
	return a, nil
}

func ablationByName(name string) (Ablation, bool) {
	for _, s := range Ablations {
		if s.Name == name {
			return s.Part, true
		}
	}
	return 0, false
}

// AblationNames lists the part names, comma-separated.
func AblationNames() string {
	names := make([]string, len(Ablations))
	for i, s := range Ablations {
		names[i] = s.Name
	}
	return strings.Join(names, ", ")
}
