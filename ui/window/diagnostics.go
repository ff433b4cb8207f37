package window

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/codexrelay/codexrelay/proxy"
	"github.com/codexrelay/codexrelay/ui/look"
)

// The dashboard's Diagnostics section: the relay's internals (model catalog, catalog
// refreshes, serialization cache, request counters), closed by default. It is built from a
// spec table, one line per figure, instead of hand-filled fields.

// figure is one line of a diagnostics panel: its label and its text for a snapshot.
type figure struct {
	label string
	text  func(proxy.Snapshot) string
}

// fig makes a figure from a value read from the snapshot and the format that shows it.
func fig[T any](label string, value func(proxy.Snapshot) T, format func(T) string) figure {
	return figure{label: label, text: func(s proxy.Snapshot) string { return format(value(s)) }}
}

// panelSpec is a titled group of figures.
type panelSpec struct {
	title   string
	figures []figure
}

// Formats for fig.
func countInt(n int) string { return look.Count(int64(n)) }

func hitRate(z proxy.Serialization) string { return percent(z.Hits, z.Hits+z.Misses) }

// medianPrep is "–" until a request reached an upstream.
func medianPrep(r proxy.RequestStats) string {
	if r.Total == 0 || r.MedianPreparationMs == 0 {
		return "–"
	}
	return millis(r.MedianPreparationMs)
}

// diagnosticsSpec is what the Diagnostics section shows.
var diagnosticsSpec = []panelSpec{
	{"Model catalog", []figure{
		fig("Age", func(s proxy.Snapshot) int64 { return s.Catalog.AgeMs }, age),
		fig("Models", func(s proxy.Snapshot) int { return s.Catalog.Models }, countInt),
		fig("TTL", func(s proxy.Snapshot) int64 { return s.Catalog.TTLMs }, minutes),
		fig("Stale-while-revalidate", func(s proxy.Snapshot) bool { return s.Catalog.SWREnabled }, onOff),
		fig("Maximum stale age", func(s proxy.Snapshot) int64 { return s.Catalog.StaleMaxAgeMs }, minutes),
	}},
	{"Catalog refreshes", []figure{
		fig("Background", func(s proxy.Snapshot) int64 { return s.Catalog.Refresh.Background }, look.Count),
		fig("Blocking", func(s proxy.Snapshot) int64 { return s.Catalog.Refresh.Blocking }, look.Count),
		fig("Shared", func(s proxy.Snapshot) int64 { return s.Catalog.Refresh.Shared }, look.Count),
		fig("Refreshes run", func(s proxy.Snapshot) int64 { return s.Catalog.Refreshes }, look.Count),
	}},
	{"Serialization cache", []figure{
		fig("Hits", func(s proxy.Snapshot) int64 { return s.Serialization.Hits }, look.Count),
		fig("Misses", func(s proxy.Snapshot) int64 { return s.Serialization.Misses }, look.Count),
		fig("Direct", func(s proxy.Snapshot) int64 { return s.Serialization.Direct }, look.Count),
		fig("Hit rate", func(s proxy.Snapshot) proxy.Serialization { return s.Serialization }, hitRate),
	}},
	{"Requests", []figure{
		fig("Total", func(s proxy.Snapshot) int64 { return s.Requests.Total }, look.Count),
		fig("Errors", func(s proxy.Snapshot) int64 { return s.Requests.Errors }, look.Count),
		fig("Rotations", func(s proxy.Snapshot) int64 { return s.Requests.Rotations }, look.Count),
		fig("In flight", func(s proxy.Snapshot) int64 { return s.Requests.InFlight }, look.Count),
		fig("WebSockets open", func(s proxy.Snapshot) int64 { return s.Requests.WebSockets }, look.Count),
		fig("Held for the pool", func(s proxy.Snapshot) int64 { return s.Requests.Held }, look.Count),
		fig("Sealed items left out", func(s proxy.Snapshot) int64 { return s.Requests.SealedOmitted }, look.Count),
		fig("Median preparation", func(s proxy.Snapshot) proxy.RequestStats { return s.Requests }, medianPrep),
	}},
}

// diagnostics is the collapsible section built from a spec: a header that opens and closes
// it (as an accordion's does) over the panels.
type diagnostics struct {
	*collapsible // its header, open, box and setOpen
	spec         []panelSpec
	values       [][]*widget.Label // per panel, per figure
	detail       *fyne.Container   // the panels
	// opened is called once the section opened (the dashboard scrolls it into view).
	opened func()
}

// diagnosticsText says what Diagnostics is for, above its figures.
const diagnosticsText = "The relay's workings since it started, for when something looks wrong and for a bug report; " +
	"nothing here needs you in everyday use. Model catalog: the model list Codex reads, how old it is and how " +
	"it was refreshed (in the background while the old one served, or while a request waited). Serialization " +
	"cache: how often a request's payload was reused rather than written out again for the next account. " +
	"Requests: totals, rotations to another account, what is under way. " +
	"The same figures, as JSON: GET /relay/stats on the relay's port."

// diagnosticsPanelWidth is the least width of a panel; the panels share the window's width,
// as many in a row as fit.
const diagnosticsPanelWidth = 250

func newDiagnostics(spec []panelSpec) *diagnostics {
	d := &diagnostics{spec: spec}
	var panels []fyne.CanvasObject
	for _, p := range spec {
		rows := []fyne.CanvasObject{heading(p.title), widget.NewSeparator()}
		var values []*widget.Label
		for _, f := range p.figures {
			v := widget.NewLabelWithStyle("–", fyne.TextAlignTrailing, fyne.TextStyle{Bold: true})
			values = append(values, v)
			rows = append(rows, container.NewBorder(nil, nil, widget.NewLabel(f.label), v))
		}
		d.values = append(d.values, values)
		panels = append(panels, newPanel(container.NewPadded(container.NewVBox(rows...))))
	}
	d.detail = container.NewVBox(note(diagnosticsText), container.New(&panelGrid{minWidth: diagnosticsPanelWidth}, panels...))
	d.collapsible = newCollapsible("Diagnostics", d.detail)
	d.toggled = func(open bool) {
		if open && d.opened != nil {
			d.opened()
		}
	}
	return d
}

// panel is a rounded box in the input background colour, taken from the theme each time it
// is drawn (so that it follows a switch between light and dark).
type panel struct {
	widget.BaseWidget
	content fyne.CanvasObject
	bg      *canvas.Rectangle
}

func newPanel(content fyne.CanvasObject) *panel {
	p := &panel{content: content, bg: canvas.NewRectangle(theme.Color(theme.ColorNameInputBackground))}
	p.bg.CornerRadius = theme.InputRadiusSize() * 2
	p.ExtendBaseWidget(p)
	return p
}

// CreateRenderer implements fyne.Widget.
func (p *panel) CreateRenderer() fyne.WidgetRenderer { return &panelRenderer{p} }

type panelRenderer struct{ p *panel }

func (r *panelRenderer) Layout(size fyne.Size) {
	r.p.bg.Resize(size)
	r.p.content.Resize(size)
}
func (r *panelRenderer) MinSize() fyne.Size { return r.p.content.MinSize() }
func (r *panelRenderer) Refresh() {
	r.p.bg.FillColor = theme.Color(theme.ColorNameInputBackground)
	r.p.bg.Refresh()
	r.p.content.Refresh()
}
func (r *panelRenderer) Objects() []fyne.CanvasObject {
	return []fyne.CanvasObject{r.p.bg, r.p.content}
}
func (r *panelRenderer) Destroy() {}

// panelGrid lays panels out in as many columns of at least minWidth as fit, stretched to fill
// the width; its height follows from the width it was last laid out at.
type panelGrid struct {
	minWidth float32
	width    float32 // the width last laid out (0: not yet, one row assumed)
}

const panelGap = 4

// columns is how many panels of n fit in a row w wide.
func (g *panelGrid) columns(w float32, n int) int {
	if w <= 0 {
		return max(n, 1)
	}
	return min(max(int((w+panelGap)/(g.minWidth+panelGap)), 1), max(n, 1))
}

func (g *panelGrid) MinSize(objs []fyne.CanvasObject) fyne.Size {
	var h float32
	for _, o := range objs {
		h = max(h, o.MinSize().Height)
	}
	cols := g.columns(g.width, len(objs))
	rows := (len(objs) + cols - 1) / cols
	return fyne.NewSize(g.minWidth, float32(rows)*h+float32(max(rows-1, 0))*panelGap)
}

func (g *panelGrid) Layout(objs []fyne.CanvasObject, size fyne.Size) {
	g.width = size.Width
	var h float32
	for _, o := range objs {
		h = max(h, o.MinSize().Height)
	}
	cols := g.columns(size.Width, len(objs))
	w := (size.Width - float32(cols-1)*panelGap) / float32(cols)
	for i, o := range objs {
		o.Move(fyne.NewPos(float32(i%cols)*(w+panelGap), float32(i/cols)*(h+panelGap)))
		o.Resize(fyne.NewSize(w, h))
	}
}

// show puts the snapshot's figures into the panels; unchanged figures are not redrawn.
func (d *diagnostics) show(s proxy.Snapshot) {
	for i, p := range d.spec {
		for j, f := range p.figures {
			setText(d.values[i][j], f.text(s))
		}
	}
}

// value is the text a figure shows (tests).
func (d *diagnostics) value(label string) string {
	for i, p := range d.spec {
		for j, f := range p.figures {
			if f.label == label {
				return d.values[i][j].Text
			}
		}
	}
	return ""
}
