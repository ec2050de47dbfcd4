package vet

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The SARIF rules of the hints, one per kind.
var sarifRules = []struct{ id, name, short string }{
	{KindUseBeforeInit, "UseBeforeInit", "A goroutine may use a value before another sets it"},
	{KindUseAfterDispose, "UseAfterDispose", "A goroutine may use a value after another set it to nil or closed it"},
	{KindCheckThenAct, "CheckThenAct", "A close or send follows a check of the same state outside one critical section"},
	{KindWaitGroup, "WaitGroupAddAfterGo", "WaitGroup.Add follows the start of the goroutine that calls Done"},
}

// writeSARIF writes the hints as a SARIF 2.1.0 log: one result per hint,
// level warning, the hint's position, its related positions, and its mark
// (confirmed, exercised, untested) and confirming report as properties.
// Files are relative to the directory the hints are relative to.
func writeSARIF(path, version string, root string, hints []Found) error {
	type region struct {
		StartLine   int `json:"startLine"`
		StartColumn int `json:"startColumn,omitempty"`
	}
	type artifact struct {
		URI       string `json:"uri"`
		URIBaseID string `json:"uriBaseId,omitempty"`
	}
	type physical struct {
		ArtifactLocation artifact `json:"artifactLocation"`
		Region           region   `json:"region"`
	}
	type message struct {
		Text string `json:"text"`
	}
	type location struct {
		ID               int      `json:"id,omitempty"`
		PhysicalLocation physical `json:"physicalLocation"`
		Message          *message `json:"message,omitempty"`
	}
	type result struct {
		RuleID              string            `json:"ruleId"`
		RuleIndex           int               `json:"ruleIndex"`
		Level               string            `json:"level"`
		Message             message           `json:"message"`
		Locations           []location        `json:"locations"`
		RelatedLocations    []location        `json:"relatedLocations,omitempty"`
		PartialFingerprints map[string]string `json:"partialFingerprints"`
		Properties          map[string]string `json:"properties,omitempty"`
	}
	type rule struct {
		ID               string            `json:"id"`
		Name             string            `json:"name"`
		ShortDescription message           `json:"shortDescription"`
		HelpURI          string            `json:"helpUri"`
		Properties       map[string]any    `json:"properties"`
		DefaultConfig    map[string]string `json:"defaultConfiguration"`
	}
	loc := func(file string, line, col int) physical {
		a := artifact{URI: filepath.ToSlash(file)}
		if !filepath.IsAbs(file) {
			a.URIBaseID = "%SRCROOT%"
		} else {
			a.URI = "file://" + filepath.ToSlash(file)
		}
		return physical{ArtifactLocation: a, Region: region{StartLine: line, StartColumn: col}}
	}
	var rules []rule
	index := map[string]int{}
	for i, r := range sarifRules {
		index[r.id] = i
		rules = append(rules, rule{
			ID: r.id, Name: r.name, ShortDescription: message{r.short},
			HelpURI:       "https://github.com/memorder/wafl/blob/main/docs/vet.md",
			Properties:    map[string]any{"tags": []string{"concurrency", "memorder"}},
			DefaultConfig: map[string]string{"level": "warning"},
		})
	}
	results := []result{}
	for _, h := range hints {
		r := result{
			RuleID: h.Kind, RuleIndex: index[h.Kind], Level: "warning",
			Message:   message{h.Message},
			Locations: []location{{PhysicalLocation: loc(h.File, h.Line, h.Col)}},
		}
		for i, rel := range h.Related {
			m := message{rel.Message}
			r.RelatedLocations = append(r.RelatedLocations, location{ID: i + 1, PhysicalLocation: loc(rel.File, rel.Line, rel.Col), Message: &m})
		}
		fp := h.Kind
		for _, p := range h.Pair {
			fp += fmt.Sprintf("|%s:%d", filepath.Base(p.File), p.Line)
		}
		sum := sha256.Sum256([]byte(fp))
		r.PartialFingerprints = map[string]string{"waflVet/v1": hex.EncodeToString(sum[:16])}
		if h.Mark != "" {
			r.Properties = map[string]string{"mark": h.Mark}
			if h.Report != "" {
				r.Properties["report"] = h.Report
			}
		}
		results = append(results, r)
	}
	rootURI := "file://" + filepath.ToSlash(root)
	if !strings.HasSuffix(rootURI, "/") {
		rootURI += "/"
	}
	log := map[string]any{
		"$schema": "https://json.schemastore.org/sarif-2.1.0.json",
		"version": "2.1.0",
		"runs": []any{map[string]any{
			"tool": map[string]any{"driver": map[string]any{
				"name": "wafl vet", "version": version,
				"informationUri": "https://github.com/memorder/wafl",
				"rules":          rules,
			}},
			"originalUriBaseIds": map[string]any{"%SRCROOT%": map[string]string{"uri": rootURI}},
			"results":            results,
		}},
	}
	data, err := json.MarshalIndent(log, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}
