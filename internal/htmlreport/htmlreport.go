// Package htmlreport writes wafl's bug reports as one self-contained HTML
// page (wafl report --html): per bug, an SVG timeline of the goroutines
// involved — the injected delay, the partner's access during it, the
// failing access and the crash — each mark labelled with its source line
// and linked to the goroutine's stack further down the page. No scripts,
// styles or fonts are loaded from elsewhere; the page is well-formed XML
// (XHTML syntax) so tools and tests can parse it.
//
// The timeline is a schematic of the order the report establishes (WAFL
// thesis §3.3: ℓ1 delayed, ℓ2 runs inside the delay window, the panic),
// not a measured trace: only the delay's planned and measured lengths are
// numbers from the run.
package htmlreport

import (
	"bufio"
	"fmt"
	"html/template"
	"io"
	"os"
	"strings"
	"time"

	"github.com/memorder/wafl/internal/report"
	"github.com/memorder/wafl/plans"
)

// Options configure Write.
type Options struct {
	Title string // default "wafl bug report"
	// Source reads line n of file for the labels; default reads the file.
	Source func(file string, line int) string
}

// Write writes the page for bugs to w.
func Write(w io.Writer, bugs []*report.Bug, o Options) error {
	if o.Title == "" {
		o.Title = "wafl bug report"
	}
	if o.Source == nil {
		o.Source = newFileSource().line
	}
	page := pageData{Title: o.Title, Generated: time.Now().UTC().Format(time.RFC3339)}
	for i, b := range bugs {
		page.Bugs = append(page.Bugs, bugView(i+1, b, o.Source))
	}
	return pageTmpl.Execute(w, page)
}

type pageData struct {
	Title, Generated string
	Bugs             []bugData
}

type bugData struct {
	N                    int
	ID                   string
	Kind, Panic, Where   string
	Package, Test        string
	Delay                string
	Reproduce            string
	Lanes                []lane
	Marks                []mark
	DelayRect            rect
	Width, Height, AxisY int
	Stacks               []stackData
	Explain              string
}

type lane struct {
	Y      int
	Label  string
	Href   string
	Title  string
	Center int
}

type rect struct{ X, Y, W, H int }

// mark is one event on a lane.
type mark struct {
	Class      string // "delayed", "partner", "failing", "crash"
	X, Y       int
	Label      string
	Source     string
	Title      string
	Href       string
	LabelAbove bool
}

type stackData struct {
	ID, Head, Text string
}

const (
	laneH  = 80
	left   = 190
	width  = 1000
	scale  = 480 // pixels of the delay bar
	topPad = 40
	maxLbl = 58 // characters of a label or source line
)

func bugView(n int, b *report.Bug, src func(string, int) string) bugData {
	d := bugData{
		N: n, ID: fmt.Sprintf("bug%d", n),
		Kind: string(b.Kind), Panic: b.Panic,
		Package: b.Package, Test: b.Test,
		Reproduce: b.Reproduce.Wafl,
		Width:     width,
	}
	d.Where = fmt.Sprintf("%s:%d", short(b.Failing.File), b.Failing.Line)
	d.Delay = fmt.Sprintf("%v planned", time.Duration(b.Delay.Ns).Round(time.Microsecond))
	if b.Delay.ActualNs > 0 {
		d.Delay += fmt.Sprintf(", %v measured", time.Duration(b.Delay.ActualNs).Round(time.Microsecond))
	}
	if b.Delay.InProgress {
		d.Delay += ", still in progress at the crash"
	}

	// Goroutines: the delayed one, the panicking one, and (for a
	// use-after-dispose whose partner ran elsewhere) "another goroutine".
	delayedG := int64(b.Delay.Goroutine)
	failG := b.PanickingGoroutine
	type laneKey struct {
		g     int64
		other bool
	}
	var keys []laneKey
	add := func(k laneKey) int {
		for i, x := range keys {
			if x == k {
				return i
			}
		}
		keys = append(keys, k)
		return len(keys) - 1
	}
	dl := add(laneKey{g: delayedG})
	fl := add(laneKey{g: failG})
	pl := -1
	if b.Partner != nil {
		switch {
		case b.Kind == plans.UseAfterDispose && failG == delayedG:
			pl = add(laneKey{other: true}) // the disposer: not in the report
		case b.Reordered && b.PartnerGoroutine != 0:
			pl = add(laneKey{g: b.PartnerGoroutine}) // ran ℓ2 during the delay
		default:
			pl = fl
		}
	}
	d.Height = topPad + len(keys)*laneH + 40
	d.AxisY = topPad + len(keys)*laneH + 10
	laneY := func(i int) int { return topPad + i*laneH + laneH/2 }
	gByID := map[int64]report.Goroutine{}
	for _, g := range b.Goroutines {
		gByID[g.ID] = g
	}
	for i, k := range keys {
		l := lane{Y: topPad + i*laneH, Center: laneY(i)}
		switch {
		case k.other:
			l.Label = "another goroutine"
			l.Title = "the goroutine that ran the partner access; its id is not in the report"
		default:
			l.Label = fmt.Sprintf("goroutine %d", k.g)
			if _, ok := gByID[k.g]; ok {
				l.Href = fmt.Sprintf("#%s-g%d", d.ID, k.g)
			}
			var roles []string
			if k.g == delayedG {
				roles = append(roles, "delayed")
			}
			if k.g == failG {
				roles = append(roles, "panicked")
			}
			l.Title = strings.Join(roles, ", ")
			if l.Title != "" {
				l.Label += " (" + l.Title + ")"
			}
		}
		d.Lanes = append(d.Lanes, l)
	}

	// Time: the delay is [left, left+scale]; the partner runs inside it.
	x0, x1 := left, left+scale
	d.DelayRect = rect{X: x0, Y: laneY(dl) - 10, W: scale, H: 20}
	loc := func(l report.Location) (string, string) {
		return fmt.Sprintf("%s:%d", short(l.File), l.Line), strings.TrimSpace(src(l.File, l.Line))
	}
	lbl, s := loc(b.Delayed)
	delayedX := x1 + 12
	class, title := "delayed", "the delayed access (ℓ1), after the delay"
	if b.Delay.InProgress {
		class, title = "delayed pending", "the delayed access (ℓ1): the crash came before the delay ended"
		lbl += " (not reached)"
	}
	d.Marks = append(d.Marks, mark{Class: class, X: delayedX, Y: laneY(dl), Label: "ℓ1 " + b.Delayed.Op + " " + lbl, Source: s,
		Title: title, Href: laneHref(d, delayedG, gByID), LabelAbove: true})
	if pl >= 0 {
		lbl, s := loc(*b.Partner)
		d.Marks = append(d.Marks, mark{Class: "partner", X: x0 + scale*2/5, Y: laneY(pl), Label: "ℓ2 " + b.Partner.Op + " " + lbl, Source: s,
			Title: "the partner access (ℓ2), inside the delay window", Href: laneHref(d, keys[pl].g, gByID), LabelAbove: true})
	}
	failX := x0 + scale*3/4
	if b.Kind == plans.UseAfterDispose && failG == delayedG {
		failX = delayedX + 50
	}
	lbl, s = loc(b.Failing)
	d.Marks = append(d.Marks, mark{Class: "failing", X: failX - 30, Y: laneY(fl), Label: "failing " + b.Failing.Op + " " + lbl, Source: s,
		Title: "the access that panicked", Href: laneHref(d, failG, gByID)})
	d.Marks = append(d.Marks, mark{Class: "crash", X: failX, Y: laneY(fl), Label: "panic: " + b.Panic,
		Title: "the crash", Href: laneHref(d, failG, gByID), LabelAbove: true})
	for i := range d.Marks {
		d.Marks[i].Label = clip(d.Marks[i].Label)
		d.Marks[i].Source = clip(d.Marks[i].Source)
	}

	switch b.Kind {
	case plans.UseBeforeInit:
		d.Explain = "The delay held back the initialization (ℓ1); the other goroutine used the value before it was set and panicked."
	case plans.UseAfterDispose:
		d.Explain = "The delay held back the use (ℓ1); the partner disposed of the value (ℓ2) inside the delay window, and the use after the delay panicked."
	}

	// Stacks: the panicking goroutine first, as in the report.
	for _, g := range b.Goroutines {
		var sb strings.Builder
		for _, f := range g.Frames {
			fmt.Fprintf(&sb, "%s\n\t%s:%d\n", f.Func, f.File, f.Line)
		}
		if g.CreatedBy != nil {
			fmt.Fprintf(&sb, "created by %s\n\t%s:%d\n", g.CreatedBy.Func, g.CreatedBy.File, g.CreatedBy.Line)
		}
		d.Stacks = append(d.Stacks, stackData{ID: fmt.Sprintf("%s-g%d", d.ID, g.ID),
			Head: fmt.Sprintf("goroutine %d [%s]", g.ID, g.State), Text: sb.String()})
	}
	return d
}

func laneHref(d bugData, g int64, gs map[int64]report.Goroutine) string {
	if _, ok := gs[g]; ok {
		return fmt.Sprintf("#%s-g%d", d.ID, g)
	}
	return ""
}

// clip shortens s to maxLbl characters.
func clip(s string) string {
	r := []rune(s)
	if len(r) <= maxLbl {
		return s
	}
	return string(r[:maxLbl-1]) + "…"
}

// short keeps the last two elements of a path.
func short(path string) string {
	parts := strings.Split(path, "/")
	if len(parts) > 2 {
		return strings.Join(parts[len(parts)-2:], "/")
	}
	return path
}

// fileSource reads source lines, caching files.
type fileSource struct{ files map[string][]string }

func newFileSource() *fileSource { return &fileSource{files: map[string][]string{}} }

func (s *fileSource) line(file string, n int) string {
	lines, ok := s.files[file]
	if !ok {
		if f, err := os.Open(file); err == nil {
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				lines = append(lines, sc.Text())
			}
			f.Close()
		}
		s.files[file] = lines
	}
	if n < 1 || n > len(lines) {
		return ""
	}
	return lines[n-1]
}

var pageTmpl = template.Must(template.New("page").Funcs(template.FuncMap{
	"add": func(a, b int) int { return a + b },
}).Parse(`<!DOCTYPE html>
<html xmlns="http://www.w3.org/1999/xhtml" lang="en">
<head>
<meta charset="utf-8"/>
<title>{{.Title}}</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 2em; }
.kind { color: #b00020; }
pre { background: #f6f6f6; padding: .6em; overflow-x: auto; font-size: 12px; }
svg { border: 1px solid #ddd; background: #fff; }
svg text { font: 12px monospace; }
svg .lane-label { font: 12px system-ui, sans-serif; fill: #333; }
svg .src { fill: #555; }
svg .delay { fill: #ffd54f; stroke: #c79a00; }
svg circle.delayed { fill: #1565c0; } svg circle.partner { fill: #2e7d32; } svg circle.failing { fill: #6a1b9a; }
svg circle.pending { fill: #fff; stroke: #1565c0; stroke-width: 2; stroke-dasharray: 3 2; }
svg .mark.delayed text { fill: #1565c0; } svg .mark.partner text { fill: #2e7d32; } svg .mark.failing text { fill: #6a1b9a; }
svg .mark.crash text { fill: #b00020; font-weight: bold; } svg .mark text.src { fill: #555; font-weight: normal; }
svg line.crash { stroke: #b00020; stroke-width: 3; }
svg .axis { stroke: #999; }
dl { display: grid; grid-template-columns: max-content auto; gap: .2em 1em; }
dt { font-weight: 600; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
<p>{{len .Bugs}} bug(s). Generated {{.Generated}}. Each timeline is a schematic of the order wafl established: the delay injected at ℓ1 (yellow), the partner access ℓ2 inside the delay window, the failing access and the crash. Click a goroutine or a mark for its stack.</p>
{{range .Bugs}}
<section class="bug" id="{{.ID}}">
<h2>{{.N}}. <span class="kind">{{.Kind}}</span> in {{.Package}}.{{.Test}} at {{.Where}}</h2>
<dl>
<dt>panic</dt><dd><code>{{.Panic}}</code></dd>
<dt>delay</dt><dd>{{.Delay}}</dd>
<dt>reproduce</dt><dd><code>{{.Reproduce}}</code></dd>
</dl>
<p>{{.Explain}}</p>
<svg class="timeline" xmlns="http://www.w3.org/2000/svg" width="{{.Width}}" height="{{.Height}}" viewBox="0 0 {{.Width}} {{.Height}}" role="img">
<title>timeline of {{.Kind}} in {{.Test}}</title>
{{range .Lanes}}<g class="goroutine">
<line class="axis" x1="180" y1="{{.Center}}" x2="980" y2="{{.Center}}"/>
{{if .Href}}<a href="{{.Href}}"><text class="lane-label" x="8" y="{{add .Center 4}}">{{.Label}}</text></a>{{else}}<text class="lane-label" x="8" y="{{add .Center 4}}">{{.Label}}</text>{{end}}
</g>
{{end}}<rect class="delay" x="{{.DelayRect.X}}" y="{{.DelayRect.Y}}" width="{{.DelayRect.W}}" height="{{.DelayRect.H}}"><title>injected delay: {{.Delay}}</title></rect>
<text x="{{.DelayRect.X}}" y="{{add .DelayRect.Y 36}}">injected delay ({{.Delay}})</text>
{{range .Marks}}<g class="mark {{.Class}}">
<title>{{.Title}}</title>
{{if .Href}}<a href="{{.Href}}">{{end}}{{if eq .Class "crash"}}<line class="crash" x1="{{add .X -9}}" y1="{{add .Y -9}}" x2="{{add .X 9}}" y2="{{add .Y 9}}"/><line class="crash" x1="{{add .X -9}}" y1="{{add .Y 9}}" x2="{{add .X 9}}" y2="{{add .Y -9}}"/>{{else}}<circle class="{{.Class}}" cx="{{.X}}" cy="{{.Y}}" r="7"/>{{end}}{{if .Href}}</a>{{end}}
{{if .LabelAbove}}<text x="{{add .X -60}}" y="{{add .Y -22}}">{{.Label}}</text>{{if .Source}}<text class="src" x="{{add .X -60}}" y="{{add .Y -10}}">{{.Source}}</text>{{end}}{{else}}<text x="{{add .X -60}}" y="{{add .Y 22}}">{{.Label}}</text>{{if .Source}}<text class="src" x="{{add .X -60}}" y="{{add .Y 34}}">{{.Source}}</text>{{end}}{{end}}
</g>
{{end}}<line class="axis" x1="180" y1="{{.AxisY}}" x2="980" y2="{{.AxisY}}"/>
<text x="930" y="{{add .AxisY 16}}">time →</text>
</svg>
<h3>Stacks</h3>
{{range .Stacks}}<div class="stack" id="{{.ID}}"><strong>{{.Head}}</strong>
<pre>{{.Text}}</pre></div>
{{end}}</section>
{{end}}
</body>
</html>
`))
