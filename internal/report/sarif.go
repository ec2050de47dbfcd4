package report

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/memorder/wafl/abi"
	"github.com/memorder/wafl/plans"
)

// SARIFOptions configure WriteSARIF.
type SARIFOptions struct {
	// ToolVersion is wafl's version.
	ToolVersion string
	// Root, when set, is the source root: files under it are written
	// relative to it with uriBaseId "%SRCROOT%", as code scanning expects.
	Root string
}

type sarifLog struct {
	Schema  string     `json:"$schema"`
	Version string     `json:"version"`
	Runs    []sarifRun `json:"runs"`
}

type sarifRun struct {
	Tool               sarifTool                   `json:"tool"`
	OriginalURIBaseIDs map[string]sarifArtifactLoc `json:"originalUriBaseIds,omitempty"`
	Results            []sarifResult               `json:"results"`
}

type sarifTool struct {
	Driver sarifDriver `json:"driver"`
}

type sarifDriver struct {
	Name           string      `json:"name"`
	Version        string      `json:"version,omitempty"`
	InformationURI string      `json:"informationUri"`
	Rules          []sarifRule `json:"rules"`
}

type sarifRule struct {
	ID                   string       `json:"id"`
	Name                 string       `json:"name"`
	ShortDescription     sarifMessage `json:"shortDescription"`
	FullDescription      sarifMessage `json:"fullDescription"`
	DefaultConfiguration struct {
		Level string `json:"level"`
	} `json:"defaultConfiguration"`
	Properties map[string]any `json:"properties,omitempty"`
}

type sarifMessage struct {
	Text string `json:"text"`
}

type sarifArtifactLoc struct {
	URI       string `json:"uri"`
	URIBaseID string `json:"uriBaseId,omitempty"`
}

type sarifRegion struct {
	StartLine   int `json:"startLine"`
	StartColumn int `json:"startColumn,omitempty"`
}

type sarifPhysical struct {
	ArtifactLocation sarifArtifactLoc `json:"artifactLocation"`
	Region           sarifRegion      `json:"region"`
}

type sarifLocation struct {
	ID               *int          `json:"id,omitempty"`
	PhysicalLocation sarifPhysical `json:"physicalLocation"`
	Message          *sarifMessage `json:"message,omitempty"`
}

type sarifResult struct {
	RuleID              string            `json:"ruleId"`
	RuleIndex           int               `json:"ruleIndex"`
	Level               string            `json:"level"`
	Message             sarifMessage      `json:"message"`
	Locations           []sarifLocation   `json:"locations"`
	RelatedLocations    []sarifLocation   `json:"relatedLocations,omitempty"`
	PartialFingerprints map[string]string `json:"partialFingerprints"`
	Properties          map[string]any    `json:"properties,omitempty"`
}

var sarifRules = []struct {
	kind        plans.Kind
	name, short string
	full        string
}{
	{plans.UseBeforeInit, "UseBeforeInit", "A goroutine uses a value before another goroutine initializes it.",
		"An order violation between goroutines: a slot (field, variable, map, channel, func) is dereferenced before the goroutine that initializes it has stored it. wafl exposed it by delaying the initialization; the program panicked."},
	{plans.UseAfterDispose, "UseAfterDispose", "A goroutine uses a value after another goroutine disposed of it.",
		"An order violation between goroutines: a slot is dereferenced after another goroutine set it to nil or closed its channel. wafl exposed it by delaying the use; the program panicked."},
	{plans.Kind(abi.PanicWGNegative), "WaitGroupNegativeCounter", "A WaitGroup's Done ran before the Add it matches.",
		"An order violation on a sync.WaitGroup: a goroutine called Done (or Add with a negative delta) before another goroutine's matching Add, and the counter went negative (\"sync: negative WaitGroup counter\"). wafl exposed it by delaying the Add."},
	{plans.Kind(abi.PanicWGReuse), "WaitGroupReuse", "A WaitGroup was reused before the previous Wait returned.",
		"An order violation on a sync.WaitGroup: Add for a new round ran while a Wait of the previous round had not returned (\"sync: WaitGroup is reused before previous Wait has returned\", or Add called concurrently with Wait)."},
	{plans.CheckThenAct, "CheckThenAct", "Two goroutines check that a value is not disposed, then both dispose of it.",
		"A check-then-act race: a goroutine checks whether a channel is closed (or a closed flag is set) and closes or disposes it when not, and another goroutine can check in between. wafl exposed it by delaying the first goroutine right after its check; both acted and the program panicked (close of closed channel, use of a disposed value)."},
}

// WriteSARIF writes bugs as a SARIF 2.1.0 log with one run, one rule per
// bug kind and one result per bug located at the failing site, with the
// delayed site (and the dispose site) as related locations.
func WriteSARIF(w io.Writer, bugs []*Bug, opt SARIFOptions) error {
	run := sarifRun{
		Tool: sarifTool{Driver: sarifDriver{
			Name:           "wafl",
			Version:        opt.ToolVersion,
			InformationURI: "https://github.com/memorder/wafl",
		}},
		Results: []sarifResult{},
	}
	for _, r := range sarifRules {
		rule := sarifRule{ID: string(r.kind), Name: r.name,
			ShortDescription: sarifMessage{r.short}, FullDescription: sarifMessage{r.full},
			Properties: map[string]any{"tags": []string{"concurrency", "memorder"}}}
		rule.DefaultConfiguration.Level = "error"
		run.Tool.Driver.Rules = append(run.Tool.Driver.Rules, rule)
	}
	root := ""
	if opt.Root != "" {
		root = filepath.Clean(opt.Root)
		run.OriginalURIBaseIDs = map[string]sarifArtifactLoc{"%SRCROOT%": {URI: fileURI(root) + "/"}}
	}
	for _, b := range bugs {
		rule := b.Kind
		if b.PanicKind == abi.PanicWGNegative || b.PanicKind == abi.PanicWGReuse {
			rule = plans.Kind(b.PanicKind)
		}
		idx := 0
		for i, r := range sarifRules {
			if r.kind == rule {
				idx = i
			}
		}
		how := fmt.Sprintf("after wafl delayed %s at %s:%d", describe(b.Delayed), filepath.Base(b.Delayed.File), b.Delayed.Line)
		switch b.How {
		case HowNatural, HowDecision:
			how = fmt.Sprintf("%s (pair with %s at %s:%d)", b.How.Describe(), describe(b.Delayed), filepath.Base(b.Delayed.File), b.Delayed.Line)
		case HowPreparation:
			how = b.How.Describe()
		}
		res := sarifResult{
			RuleID:    string(rule),
			RuleIndex: idx,
			Level:     "error",
			Message: sarifMessage{fmt.Sprintf("%s: %s panicked with %q %s (test %s, run %d, seed %d). Reproduce: %s",
				b.Kind, describe(b.Failing), b.Panic, how,
				b.Test, b.Run, b.Seed, b.Reproduce.Wafl)},
			Locations: []sarifLocation{{PhysicalLocation: physical(b.Failing, root)}},
			PartialFingerprints: map[string]string{
				"waflBug/v1": fingerprint(b),
			},
			Properties: map[string]any{"package": b.Package, "test": b.Test, "seed": b.Seed, "run": b.Run},
		}
		id := 0
		if b.Delayed.File != "" {
			id++
			res.RelatedLocations = append(res.RelatedLocations, sarifLocation{ID: ptr(id),
				PhysicalLocation: physical(b.Delayed, root), Message: &sarifMessage{"delayed here: " + describe(b.Delayed)}})
		}
		if b.Partner != nil {
			id++
			what := "disposed here: "
			if b.Kind == plans.CheckThenAct {
				what = "checked here by the other goroutine: "
			}
			if b.Kind == plans.UseBeforeInit {
				what = "used here during the delay: "
			}
			res.RelatedLocations = append(res.RelatedLocations, sarifLocation{ID: ptr(id),
				PhysicalLocation: physical(*b.Partner, root), Message: &sarifMessage{what + describe(*b.Partner)}})
		}
		run.Results = append(run.Results, res)
	}
	data, err := json.MarshalIndent(sarifLog{
		Schema:  "https://json.schemastore.org/sarif-2.1.0.json",
		Version: "2.1.0",
		Runs:    []sarifRun{run},
	}, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(data, '\n'))
	return err
}

func ptr(i int) *int { return &i }

func describe(l Location) string {
	if l.Expr != "" {
		return "`" + l.Expr + "`"
	}
	return fmt.Sprintf("site %d", l.Site)
}

func physical(l Location, root string) sarifPhysical {
	art := sarifArtifactLoc{URI: fileURI(l.File)}
	if root != "" {
		if rel, err := filepath.Rel(root, l.File); err == nil && !strings.HasPrefix(rel, "..") && !filepath.IsAbs(rel) {
			art = sarifArtifactLoc{URI: (&url.URL{Path: filepath.ToSlash(rel)}).String(), URIBaseID: "%SRCROOT%"}
		}
	}
	return sarifPhysical{ArtifactLocation: art, Region: sarifRegion{StartLine: max(l.Line, 1), StartColumn: l.Col}}
}

func fileURI(path string) string {
	if !filepath.IsAbs(path) {
		return (&url.URL{Path: filepath.ToSlash(path)}).String()
	}
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(path)}).String()
}

// fingerprint identifies a bug across runs: kind, package, test and the
// two sites' file, line and expression (not site ids, which change when
// the code is re-instrumented).
func fingerprint(b *Bug) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s:%d:%s\x00%s:%d:%s", b.Kind, b.Package, b.Test,
		filepath.Base(b.Delayed.File), b.Delayed.Line, b.Delayed.Expr,
		filepath.Base(b.Failing.File), b.Failing.Line, b.Failing.Expr)
	return hex.EncodeToString(h.Sum(nil))[:32]
}
