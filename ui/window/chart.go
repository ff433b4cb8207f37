package window

import (
	"image/color"
	"math"
	"reflect"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// A bar chart drawn with Fyne's canvas: one bar per day, each a stack of parts (one per
// account, or per kind of cost), over a few labelled grid lines. Like the cells, it redraws
// only when what it shows changed.

// chartData is what a chart shows.
type chartData struct {
	bars []chartBar
	// top is the value at the top of the plot; ticks are the grid lines drawn, with their labels.
	top   float64
	ticks []chartTick
}

// chartBar is one bar: its label under the axis and its parts, bottom to top.
type chartBar struct {
	key, label string
	parts      []chartPart
}

// chartPart is one segment of a bar: a series' value, in its colour.
type chartPart struct {
	series string
	value  float64
	color  fyne.ThemeColorName
}

// chartTick is a grid line at a value, labelled in the gutter.
type chartTick struct {
	value float64
	label string
}

// newChartData is a chart of bars with an axis from 0 to a round value at or above the
// tallest bar, with grid lines at the half and the top, labelled by format.
func newChartData(bars []chartBar, format func(float64) string) chartData {
	var tallest float64
	for _, b := range bars {
		var sum float64
		for _, p := range b.parts {
			sum += p.value
		}
		tallest = max(tallest, sum)
	}
	return newChartDataTo(bars, niceCeil(tallest), format)
}

// newChartDataTo is a chart of bars with an axis from 0 to top.
func newChartDataTo(bars []chartBar, top float64, format func(float64) string) chartData {
	return chartData{bars: bars, top: top, ticks: []chartTick{{top / 2, format(top / 2)}, {top, format(top)}}}
}

// niceCeil is the least of 1, 2, 2.5 or 5 times a power of ten at or above v (1 for v <= 0).
func niceCeil(v float64) float64 {
	if v <= 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= v*(1-1e-12) {
			return m * p
		}
	}
	return 10 * p
}

// chartGap is the gap left above each segment, so that two stacked accounts of close colours
// stay apart: a segment of value v is drawn v/top*plotHeight - chartGap tall.
const chartGap = 1

// chartSegment is a drawn segment (for the tests): its bar, its series and its rectangle.
type chartSegment struct {
	bar, series string
	value       float64
	rect        *canvas.Rectangle
}

// barChart is a stacked bar chart. Pointing at a bar shows its figures above the plot.
type barChart struct {
	widget.BaseWidget
	data      chartData
	minHeight float32
	// format writes a value for the figures shown on hover.
	format func(float64) string
	// hover is the bar under the pointer (-1: none); tip shows its figures.
	hover int
	tip   *canvas.Text
	tipBg *canvas.Rectangle

	segs    []chartSegment
	grid    []*canvas.Line
	gridTxt []*canvas.Text
	xTxt    []*canvas.Text
	axis    *canvas.Line
	objs    []fyne.CanvasObject
}

func newBarChart(minHeight float32, format func(float64) string) *barChart {
	c := &barChart{minHeight: minHeight, format: format, hover: -1,
		axis: canvas.NewLine(color.Transparent), tip: canvas.NewText("", color.Transparent),
		tipBg: canvas.NewRectangle(color.Transparent)}
	c.tipBg.CornerRadius = 3
	c.tip.TextSize = theme.CaptionTextSize()
	c.ExtendBaseWidget(c)
	c.build()
	return c
}

// Set shows d, redrawing only when it differs from what is shown.
func (c *barChart) Set(d chartData) {
	if reflect.DeepEqual(d, c.data) {
		return
	}
	c.data = d
	c.hover = -1
	c.tip.Text = ""
	c.build()
	c.Refresh()
	redraws.Add(1)
}

// MouseIn implements desktop.Hoverable.
func (c *barChart) MouseIn(e *desktop.MouseEvent) { c.MouseMoved(e) }

// MouseMoved shows the figures of the bar under the pointer.
func (c *barChart) MouseMoved(e *desktop.MouseEvent) { c.setHover(c.barAt(e.Position.X)) }

// MouseOut implements desktop.Hoverable.
func (c *barChart) MouseOut() { c.setHover(-1) }

// barAt is the index of the bar whose slot holds x (-1: none).
func (c *barChart) barAt(x float32) int {
	n := len(c.data.bars)
	gutter := chartGutter(c.gridTxtWidth())
	if n == 0 || x < gutter {
		return -1
	}
	i := int((x - gutter) / ((c.Size().Width - gutter) / float32(n)))
	if i >= n {
		return -1
	}
	return i
}

// setHover shows the figures of bar i above the plot ("" for -1), redrawing only on change.
func (c *barChart) setHover(i int) {
	if i == c.hover {
		return
	}
	c.hover = i
	text := ""
	if i >= 0 {
		b := c.data.bars[i]
		var sum float64
		var parts []string
		for _, p := range b.parts {
			if p.value > 0 {
				sum += p.value
				parts = append(parts, p.series+" "+c.format(p.value))
			}
		}
		text = b.label + ": " + c.format(sum)
		if len(parts) > 1 {
			text += " (" + strings.Join(parts, ", ") + ")"
		}
	}
	c.tip.Text = text
	c.tipBg.Hidden = text == ""
	c.layoutTip(c.Size())
	c.tip.Refresh()
	c.tipBg.Refresh()
}

// layoutTip puts the figures at the plot's top right, on a panel over the bars.
func (c *barChart) layoutTip(size fyne.Size) {
	ts := c.tip.MinSize()
	c.tip.Move(fyne.NewPos(size.Width-ts.Width-4, 0))
	c.tip.Resize(ts)
	c.tipBg.Move(fyne.NewPos(size.Width-ts.Width-8, 0))
	c.tipBg.Resize(fyne.NewSize(ts.Width+8, ts.Height))
}

// segments are the drawn segments, bar by bar, bottom to top (tests).
func (c *barChart) segments() []chartSegment { return c.segs }

// build makes the canvas objects for the data; Layout places them.
func (c *barChart) build() {
	c.segs, c.grid, c.gridTxt, c.xTxt = nil, nil, nil, nil
	objs := []fyne.CanvasObject{}
	for _, t := range c.data.ticks {
		l := canvas.NewLine(color.Transparent)
		l.StrokeWidth = 1
		txt := canvas.NewText(t.label, color.Transparent)
		txt.TextSize = theme.CaptionTextSize()
		txt.Alignment = fyne.TextAlignTrailing
		c.grid, c.gridTxt = append(c.grid, l), append(c.gridTxt, txt)
		objs = append(objs, l, txt)
	}
	for _, b := range c.data.bars {
		for _, p := range b.parts {
			if p.value <= 0 {
				continue
			}
			r := canvas.NewRectangle(color.Transparent)
			c.segs = append(c.segs, chartSegment{bar: b.key, series: p.series, value: p.value, rect: r})
			objs = append(objs, r)
		}
		txt := canvas.NewText(b.label, color.Transparent)
		txt.TextSize = theme.CaptionTextSize()
		txt.Alignment = fyne.TextAlignCenter
		c.xTxt = append(c.xTxt, txt)
		objs = append(objs, txt)
	}
	c.axis.StrokeWidth = 1
	c.tipBg.Hidden = true
	c.objs = append(objs, c.axis, c.tipBg, c.tip)
}

// CreateRenderer implements fyne.Widget.
func (c *barChart) CreateRenderer() fyne.WidgetRenderer { return &chartRenderer{c} }

type chartRenderer struct{ c *barChart }

// gridTxtWidth is the width of the widest grid line label.
func (c *barChart) gridTxtWidth() float32 {
	var w float32
	for _, t := range c.gridTxt {
		w = max(w, t.MinSize().Width)
	}
	return w
}

// chartGutter is the width left of the plot for labels w wide.
func chartGutter(w float32) float32 { return w + 6 }

// gutter is the width of the grid lines' labels, left of the plot.
func (r *chartRenderer) gutter() float32 { return chartGutter(r.c.gridTxtWidth()) }

// labelHeight is the height of the day labels under the axis.
func (r *chartRenderer) labelHeight() float32 {
	return fyne.MeasureText("Mar 12", theme.CaptionTextSize(), fyne.TextStyle{}).Height
}

func (r *chartRenderer) Layout(size fyne.Size) {
	c := r.c
	gutter, lh := r.gutter(), r.labelHeight()
	top := lh / 2 // room for the top grid line's label
	base := size.Height - lh - 2
	plotH := max(base-top, 1)
	plotW := max(size.Width-gutter, 1)
	y := func(v float64) float32 {
		if c.data.top <= 0 {
			return base
		}
		return base - float32(v/c.data.top)*plotH
	}
	for i, t := range c.data.ticks {
		ly := y(t.value)
		c.grid[i].Position1 = fyne.NewPos(gutter, ly)
		c.grid[i].Position2 = fyne.NewPos(size.Width, ly)
		ts := c.gridTxt[i].MinSize()
		c.gridTxt[i].Move(fyne.NewPos(0, ly-ts.Height/2))
		c.gridTxt[i].Resize(fyne.NewSize(gutter-6, ts.Height))
	}
	c.axis.Position1 = fyne.NewPos(gutter, base)
	c.axis.Position2 = fyne.NewPos(size.Width, base)
	c.layoutTip(size)

	n := len(c.data.bars)
	if n == 0 {
		return
	}
	slot := plotW / float32(n)
	barW := max(slot*0.7, 1)
	// Label every k-th day, counting back from the last, so that labels never touch.
	widest := fyne.MeasureText("Mar 30", theme.CaptionTextSize(), fyne.TextStyle{}).Width + 8
	every := max(int(math.Ceil(float64(widest/slot))), 1)
	s := 0
	for i, b := range c.data.bars {
		x := gutter + float32(i)*slot + (slot-barW)/2
		var sum float64
		for _, p := range b.parts {
			if p.value <= 0 {
				continue
			}
			y0, y1 := y(sum), y(sum+p.value)
			h := max(y0-y1-chartGap, 1)
			c.segs[s].rect.Move(fyne.NewPos(x, y0-(y0-y1)))
			c.segs[s].rect.Resize(fyne.NewSize(barW, h))
			sum += p.value
			s++
		}
		t := c.xTxt[i]
		t.Hidden = (n-1-i)%every != 0
		ts := t.MinSize()
		// Centred under its bar, but never past the plot's ends.
		lx := min(max(gutter+float32(i)*slot+slot/2-ts.Width/2, gutter), size.Width-ts.Width)
		t.Move(fyne.NewPos(lx, base+2))
		t.Resize(ts)
	}
}

func (r *chartRenderer) MinSize() fyne.Size {
	return fyne.NewSize(r.gutter()+float32(len(r.c.data.bars))*4, r.c.minHeight)
}

// Refresh colours the objects from the current theme (a switch to dark follows) and lays
// them out again.
func (r *chartRenderer) Refresh() {
	c := r.c
	dimText := theme.Color(theme.ColorNamePlaceHolder)
	grid := theme.Color(theme.ColorNameSeparator)
	for i := range c.grid {
		c.grid[i].StrokeColor = grid
		c.gridTxt[i].Color = dimText
		c.gridTxt[i].TextSize = theme.CaptionTextSize()
	}
	c.axis.StrokeColor = dimText
	c.tip.Color = theme.Color(theme.ColorNameForeground)
	c.tipBg.FillColor = theme.Color(theme.ColorNameOverlayBackground)
	c.tipBg.StrokeColor = theme.Color(theme.ColorNameSeparator)
	c.tipBg.StrokeWidth = 1
	c.tip.TextSize = theme.CaptionTextSize()
	s := 0
	for _, b := range c.data.bars {
		for _, p := range b.parts {
			if p.value > 0 {
				c.segs[s].rect.FillColor = theme.Color(p.color)
				s++
			}
		}
	}
	for _, t := range c.xTxt {
		t.Color = dimText
		t.TextSize = theme.CaptionTextSize()
	}
	r.Layout(c.Size())
	for _, o := range c.objs {
		o.Refresh()
	}
}

func (r *chartRenderer) Objects() []fyne.CanvasObject { return r.c.objs }
func (r *chartRenderer) Destroy()                     {}

// legendItem is one series in a legend: a swatch of its colour and its name.
type legendItem struct {
	text  string
	color fyne.ThemeColorName
}

// legend names a chart's series beside swatches of their colours.
type legend struct {
	widget.BaseWidget
	items []legendItem
	box   *fyne.Container
}

func newLegend() *legend {
	l := &legend{box: container.NewHBox()}
	l.ExtendBaseWidget(l)
	return l
}

// Set shows items, redrawing only when they changed.
func (l *legend) Set(items []legendItem) {
	if reflect.DeepEqual(items, l.items) {
		return
	}
	l.items = items
	objs := make([]fyne.CanvasObject, 0, len(items))
	for _, it := range items {
		objs = append(objs, newSwatch(it.color), newDimText(it.text))
	}
	l.box.Objects = objs
	l.box.Refresh()
	redraws.Add(1)
}

// CreateRenderer implements fyne.Widget.
func (l *legend) CreateRenderer() fyne.WidgetRenderer { return widget.NewSimpleRenderer(l.box) }

// dimText is a label in the body colour at caption size, for legends.
func newDimText(s string) fyne.CanvasObject {
	t := widget.NewRichText(&widget.TextSegment{Text: s, Style: widget.RichTextStyle{
		ColorName: theme.ColorNameForeground, Inline: true, SizeName: theme.SizeNameCaptionText}})
	return t
}
