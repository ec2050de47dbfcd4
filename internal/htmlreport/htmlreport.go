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
	AxisX0, AxisX1       int
	DelayText            string
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
	laneH    = 96  // a lane: labels above and below its line
	topPad   = 24  // above the first lane
	charW    = 7.4 // pixels of a 12px monospace character (the labels)
	laneChar = 7.0 // pixels of a 12px sans-serif character (lane names), generous
	gap      = 18  // between a label's end and the next label on its side
	step     = 56  // least distance between two marks in time
	delayMin = 220 // least width of the delay bar
)

// event is one mark of the timeline before it is placed: its lane, class,
// labels and which side of the lane line the labels go.
type event struct {
	lane                 int
	class                string
	label, source, title string
	href                 string
	above                bool
}

func bugView(n int, b *report.Bug, src func(string, int) string) bugData {
	d := bugData{
		N: n, ID: fmt.Sprintf("bug%d", n),
		Kind: string(b.Kind), Panic: b.Panic,
		Package: b.Package, Test: b.Test,
		Reproduce: b.Reproduce.Wafl,
	}
	if b.Reproduce.Report != "" {
		d.Reproduce = "wafl reproduce " + b.Reproduce.Report
	}
	d.Where = fmt.Sprintf("%s:%d", short(b.Failing.File), b.Failing.Line)
	d.Delay = fmt.Sprintf("%v planned", time.Duration(b.Delay.Ns).Round(time.Microsecond))
	if b.Delay.ActualNs > 0 {
		d.Delay += fmt.Sprintf(", %v measured", time.Duration(b.Delay.ActualNs).Round(time.Microsecond))
	}
	if b.Delay.InProgress {
		d.Delay += ", still in progress at the crash"
	}

	// Goroutines: the delayed one, the partner (who ran ℓ2 during the
	// delay) and the panicking one, each once.
	delayedG := int64(b.Delay.Goroutine)
	failG := b.PanickingGoroutine
	partnerG := b.PartnerGoroutine
	var lanes []int64 // goroutine ids; 0 is a goroutine the report does not name
	add := func(g int64) int {
		for i, x := range lanes {
			if x == g {
				return i
			}
		}
		lanes = append(lanes, g)
		return len(lanes) - 1
	}
	dl := add(delayedG)
	pl := -1
	if b.Partner != nil || b.Reordered {
		switch {
		case partnerG != 0:
			pl = add(partnerG)
		case b.Kind == plans.UseAfterDispose || b.Kind == plans.CheckThenAct:
			pl = add(0) // another goroutine, not named in the log
		default:
			pl = add(failG)
		}
	}
	fl := add(failG)
	gByID := map[int64]report.Goroutine{}
	for _, g := range b.Goroutines {
		gByID[g.ID] = g
	}
	labelW := 0
	for _, g := range lanes {
		l := lane{}
		if g == 0 {
			l.Label = "another goroutine"
			l.Title = "the goroutine that ran the partner access; the run log does not name it"
		} else {
			l.Label = fmt.Sprintf("goroutine %d", g)
			if _, ok := gByID[g]; ok {
				l.Href = fmt.Sprintf("#%s-g%d", d.ID, g)
			}
			var roles []string
			if g == delayedG {
				roles = append(roles, "delayed")
			}
			if g == partnerG || (b.Partner == nil && g == failG && g != delayedG) {
				roles = append(roles, "partner")
			}
			if g == failG {
				roles = append(roles, "panicked")
			}
			l.Title = strings.Join(roles, ", ")
			if l.Title != "" {
				l.Label += " (" + l.Title + ")"
			}
		}
		labelW = max(labelW, int(float64(len([]rune(l.Label)))*laneChar)+24)
		d.Lanes = append(d.Lanes, l)
	}
	laneY := func(i int) int { return topPad + i*laneH + laneH/2 }
	for i := range d.Lanes {
		d.Lanes[i].Y = topPad + i*laneH
		d.Lanes[i].Center = laneY(i)
	}

	loc := func(l report.Location) (string, string) {
		return fmt.Sprintf("%s:%d", short(l.File), l.Line), clipSource(strings.TrimSpace(src(l.File, l.Line)))
	}
	href := func(lane int) string {
		if lanes[lane] == 0 {
			return ""
		}
		return laneHref(d, lanes[lane], gByID)
	}

	// The events in the order the report establishes, with the delay's end
	// between those inside its window and those after it.
	lbl1, src1 := loc(b.Delayed)
	delayed := event{lane: dl, class: "delayed", label: "ℓ1 " + b.Delayed.Op + " " + lbl1, source: src1,
		title: "the delayed access (ℓ1), after the delay", href: href(dl), above: true}
	if b.Delay.InProgress {
		delayed.class, delayed.title = "delayed pending", "the delayed access (ℓ1): the crash came before the delay ended"
		delayed.label += " (not reached)"
	}
	var inside, after []event
	if pl >= 0 && b.Partner != nil {
		lbl, s := loc(*b.Partner)
		inside = append(inside, event{lane: pl, class: "partner", label: "ℓ2 " + b.Partner.Op + " " + lbl, source: s,
			title: "the partner access (ℓ2), inside the delay window", href: href(pl), above: true})
	}
	lblF, srcF := loc(b.Failing)
	failing := event{lane: fl, class: "failing", label: "failing " + b.Failing.Op + " " + lblF, source: srcF,
		title: "the access that panicked", href: href(fl), above: false}
	crash := event{lane: fl, class: "crash", label: "panic: " + b.Panic, title: "the crash", href: href(fl), above: true}
	if fl == dl && !b.Delay.InProgress {
		// The delayed goroutine failed after its delay: ℓ1, then the crash.
		after = append(after, delayed, failing, crash)
	} else {
		inside = append(inside, failing, crash)
		after = append(after, delayed)
	}

	// Place them: every mark later in time than the one before, and no
	// label over another on the same side of the same lane.
	x0 := labelW + 16
	d.DelayRect = rect{X: x0, Y: laneY(dl) - 9, W: 0, H: 18}
	end := make(map[[2]int]int) // (lane, above) -> x where its last label ends
	side := func(e event) [2]int {
		a := 0
		if e.above {
			a = 1
		}
		return [2]int{e.lane, a}
	}
	delayText := "injected delay (" + d.Delay + ")"
	end[[2]int{dl, 0}] = x0 + int(float64(len([]rune(delayText)))*charW) + gap
	x := x0
	place := func(e event) {
		// The side of the lane line where the label fits earlier; the
		// event's own side on a tie.
		other := e
		other.above = !e.above
		if max(x+step, end[side(other)]+gap+8) < max(x+step, end[side(e)]+gap+8) {
			e = other
		}
		x = max(x+step, end[side(e)]+gap+8)
		w := int(float64(max(len([]rune(e.label)), len([]rune(e.source)))) * charW)
		end[side(e)] = x - 8 + w
		d.Marks = append(d.Marks, mark{Class: e.class, X: x, Y: laneY(e.lane), Label: e.label, Source: e.source,
			Title: e.title, Href: e.href, LabelAbove: e.above})
	}
	for _, e := range inside {
		place(e)
	}
	x = max(x+step, x0+delayMin)
	d.DelayRect.W = x - x0
	for _, e := range after {
		place(e)
	}
	right := x + step
	for _, v := range end {
		right = max(right, v+gap)
	}
	d.Width = right
	d.Height = topPad + len(lanes)*laneH + 28
	d.AxisY = topPad + len(lanes)*laneH + 8
	d.AxisX0, d.AxisX1 = labelW, right-10
	d.DelayText = delayText

	switch b.Kind {
	case plans.UseBeforeInit:
		d.Explain = "The delay held back the initialization (ℓ1); the other goroutine used the value before it was set and panicked."
	case plans.UseAfterDispose:
		d.Explain = "The delay held back the use (ℓ1); the partner disposed of the value (ℓ2) inside the delay window, and the use after the delay panicked."
	case plans.CheckThenAct:
		d.Explain = "The delay held one goroutine between its check (ℓ1) and its act; another goroutine checked too (ℓ2) inside the delay window, both acted, and the second act panicked."
	}
	if b.Reordered {
		d.Explain = "The delay held back ℓ1; another goroutine reached ℓ2 inside the delay window, and the order the code relied on was reversed: the crash followed."
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

// maxSource is how much of a source line a label shows: the line is
// context for the file:line above it, which is never shortened.
const maxSource = 64

// clipSource shortens a source line to maxSource characters, marking the cut.
func clipSource(s string) string {
	r := []rune(s)
	if len(r) <= maxSource {
		return s
	}
	return string(r[:maxSource-1]) + "…"
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
.scroll { overflow-x: auto; }
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
{{range .Bugs}}{{$bug := .}}
<section class="bug" id="{{.ID}}">
<h2>{{.N}}. <span class="kind">{{.Kind}}</span> in {{.Package}}.{{.Test}} at {{.Where}}</h2>
<dl>
<dt>panic</dt><dd><code>{{.Panic}}</code></dd>
<dt>delay</dt><dd>{{.Delay}}</dd>
<dt>reproduce</dt><dd><code>{{.Reproduce}}</code></dd>
</dl>
<p>{{.Explain}}</p>
<div class="scroll"><svg class="timeline" xmlns="http://www.w3.org/2000/svg" width="{{.Width}}" height="{{.Height}}" viewBox="0 0 {{.Width}} {{.Height}}" role="img">
<title>timeline of {{.Kind}} in {{.Test}}</title>
{{range .Lanes}}<g class="goroutine">
<line class="axis" x1="{{$bug.AxisX0}}" y1="{{.Center}}" x2="{{$bug.AxisX1}}" y2="{{.Center}}"/>
{{if .Href}}<a href="{{.Href}}"><text class="lane-label" x="8" y="{{add .Center 4}}">{{.Label}}</text></a>{{else}}<text class="lane-label" x="8" y="{{add .Center 4}}">{{.Label}}</text>{{end}}
</g>
{{end}}<rect class="delay" x="{{.DelayRect.X}}" y="{{.DelayRect.Y}}" width="{{.DelayRect.W}}" height="{{.DelayRect.H}}"><title>injected delay: {{.Delay}}</title></rect>
<text class="delay-text" x="{{.DelayRect.X}}" y="{{add .DelayRect.Y 34}}">{{.DelayText}}</text>
{{range .Marks}}<g class="mark {{.Class}}">
<title>{{.Title}}</title>
{{if .Href}}<a href="{{.Href}}">{{end}}{{if eq .Class "crash"}}<line class="crash" x1="{{add .X -9}}" y1="{{add .Y -9}}" x2="{{add .X 9}}" y2="{{add .Y 9}}"/><line class="crash" x1="{{add .X -9}}" y1="{{add .Y 9}}" x2="{{add .X 9}}" y2="{{add .Y -9}}"/>{{else}}<circle class="{{.Class}}" cx="{{.X}}" cy="{{.Y}}" r="7"/>{{end}}{{if .Href}}</a>{{end}}
{{if .LabelAbove}}{{if .Source}}<text x="{{add .X -8}}" y="{{add .Y -30}}">{{.Label}}</text><text class="src" x="{{add .X -8}}" y="{{add .Y -15}}">{{.Source}}</text>{{else}}<text x="{{add .X -8}}" y="{{add .Y -15}}">{{.Label}}</text>{{end}}{{else}}<text x="{{add .X -8}}" y="{{add .Y 26}}">{{.Label}}</text>{{if .Source}}<text class="src" x="{{add .X -8}}" y="{{add .Y 41}}">{{.Source}}</text>{{end}}{{end}}
</g>
{{end}}<line class="axis" x1="{{.AxisX0}}" y1="{{.AxisY}}" x2="{{.AxisX1}}" y2="{{.AxisY}}"/>
<text x="{{add .AxisX1 -50}}" y="{{add .AxisY 16}}">time →</text>
</svg></div>
<h3>Stacks</h3>
{{range .Stacks}}<div class="stack" id="{{.ID}}"><strong>{{.Head}}</strong>
<pre>{{.Text}}</pre></div>
{{end}}</section>
{{end}}
</body>
</html>
`))
