package window

import (
	"image/color"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/codexrelay/codexrelay/ui/look"
)

// Table cells as small typed widgets: each has a Set method that takes what it shows and
// redraws only when that changed, so that a row never reaches into a container's Objects by
// index and an unchanged view redraws nothing.

// textView is what a text cell shows: the text and its tone.
type textView struct {
	text string
	tone look.Tone
}

// textCell is one line of text in a tone, cut with an ellipsis when its column is narrow.
type textCell struct {
	widget.BaseWidget
	rich  *widget.RichText
	seg   *widget.TextSegment
	shown textView
}

func newTextCell(align fyne.TextAlign) *textCell {
	c := &textCell{seg: &widget.TextSegment{Style: widget.RichTextStyle{
		Alignment: align, ColorName: theme.ColorNameForeground, Inline: true}}}
	c.rich = widget.NewRichText(c.seg)
	c.rich.Truncation = fyne.TextTruncateEllipsis
	c.ExtendBaseWidget(c)
	return c
}

// newBoldCell is a text cell in bold (headers, names).
func newBoldCell(align fyne.TextAlign) *textCell {
	c := newTextCell(align)
	c.seg.Style.TextStyle.Bold = true
	return c
}

// CreateRenderer implements fyne.Widget.
func (c *textCell) CreateRenderer() fyne.WidgetRenderer { return widget.NewSimpleRenderer(c.rich) }

// Set shows v.
func (c *textCell) Set(v textView) {
	if v == c.shown {
		return
	}
	c.shown = v
	c.seg.Text = v.text
	c.seg.Style.ColorName = toneColorName(v.tone)
	c.rich.Refresh()
	redraws.Add(1)
}

// Text is the text the cell shows.
func (c *textCell) Text() string { return c.shown.text }

// mark is a small shape in a theme colour, centred in its place: a dot (a circle) for a
// state in its tone (an account's, the relay's), a swatch (a square with rounded corners) for a
// chart's series. It takes its colour from the theme each time it is drawn, so it follows a
// switch to the dark variant.
type mark struct {
	widget.BaseWidget
	color fyne.ThemeColorName
	shape fyne.CanvasObject
	fill  func(color.Color) // paints the shape
	room  float32           // the mark's least width and height, a margin around the shape included
}

// markSize is the side of a mark's shape; a dot takes dotRoom, a swatch swatchRoom.
const (
	markSize   = 10
	dotRoom    = markSize + 4
	swatchRoom = markSize + 2
)

func newMark(c fyne.ThemeColorName, shape fyne.CanvasObject, fill func(color.Color), room float32) *mark {
	m := &mark{color: c, shape: shape, fill: fill, room: room}
	m.ExtendBaseWidget(m)
	return m
}

// newDot is a dot, in the dim tone until SetTone.
func newDot() *mark {
	c := canvas.NewCircle(toneColor(look.Dim))
	return newMark(toneColorName(look.Dim), c, func(col color.Color) { c.FillColor = col }, dotRoom)
}

// newSwatch is a swatch of the theme colour c.
func newSwatch(c fyne.ThemeColorName) *mark {
	r := canvas.NewRectangle(theme.Color(c))
	r.CornerRadius = 2
	return newMark(c, r, func(col color.Color) { r.FillColor = col }, swatchRoom)
}

// SetTone colours a dot.
func (m *mark) SetTone(t look.Tone) {
	if c := toneColorName(t); c != m.color {
		m.color = c
		m.Refresh()
		redraws.Add(1)
	}
}

// CreateRenderer implements fyne.Widget.
func (m *mark) CreateRenderer() fyne.WidgetRenderer { return &markRenderer{m} }

type markRenderer struct{ m *mark }

func (r *markRenderer) Layout(size fyne.Size) {
	r.m.shape.Resize(fyne.NewSquareSize(markSize))
	r.m.shape.Move(fyne.NewPos((size.Width-markSize)/2, (size.Height-markSize)/2))
}
func (r *markRenderer) MinSize() fyne.Size { return fyne.NewSquareSize(r.m.room) }
func (r *markRenderer) Refresh() {
	r.m.fill(theme.Color(r.m.color))
	r.m.shape.Refresh()
}
func (r *markRenderer) Objects() []fyne.CanvasObject { return []fyne.CanvasObject{r.m.shape} }
func (r *markRenderer) Destroy()                     {}

// badge is a small rounded label beside a name ("serving next"); hidden while empty.
type badge struct {
	widget.BaseWidget
	text *canvas.Text
	bg   *canvas.Rectangle
}

func newBadge() *badge {
	b := &badge{text: canvas.NewText("", color.Black), bg: canvas.NewRectangle(color.Transparent)}
	b.text.TextSize = theme.CaptionTextSize()
	b.bg.CornerRadius = 6
	b.ExtendBaseWidget(b)
	b.Hide()
	return b
}

// SetText shows text in the badge, or hides it for "".
func (b *badge) SetText(text string) {
	if text != b.text.Text {
		b.text.Text = text
		b.Refresh()
		redraws.Add(1)
	}
	setVisible(b, text != "")
}

// CreateRenderer implements fyne.Widget.
func (b *badge) CreateRenderer() fyne.WidgetRenderer { return &badgeRenderer{b} }

type badgeRenderer struct{ b *badge }

const badgePad = 6

func (r *badgeRenderer) Layout(size fyne.Size) {
	text := r.b.text.MinSize()
	h := text.Height + 2
	r.b.bg.Resize(fyne.NewSize(size.Width, h))
	r.b.bg.Move(fyne.NewPos(0, (size.Height-h)/2))
	r.b.text.Resize(text)
	r.b.text.Move(fyne.NewPos(badgePad, (size.Height-text.Height)/2))
}
func (r *badgeRenderer) MinSize() fyne.Size {
	text := r.b.text.MinSize()
	return fyne.NewSize(text.Width+2*badgePad, text.Height+2)
}
func (r *badgeRenderer) Refresh() {
	// The primary colour, faint, behind text in the body colour: readable in both variants.
	p := color.NRGBAModel.Convert(theme.Color(theme.ColorNamePrimary)).(color.NRGBA)
	p.A = 0x40
	r.b.bg.FillColor = p
	r.b.text.Color = theme.Color(theme.ColorNameForeground)
	r.b.text.TextSize = theme.CaptionTextSize()
	r.b.bg.Refresh()
	r.b.text.Refresh()
}
func (r *badgeRenderer) Objects() []fyne.CanvasObject {
	return []fyne.CanvasObject{r.b.bg, r.b.text}
}
func (r *badgeRenderer) Destroy() {}

// nameCell is an account's name in bold, with an optional badge right after it; a name too
// long for the column is cut with an ellipsis, never the badge.
type nameCell struct {
	widget.BaseWidget
	name  *textCell
	badge *badge
}

func newNameCell() *nameCell {
	c := &nameCell{name: newBoldCell(fyne.TextAlignLeading), badge: newBadge()}
	c.ExtendBaseWidget(c)
	return c
}

// nameView is what a name cell shows: the name and its badge ("" for none).
type nameView struct {
	name, badge string
}

// Set shows v.
func (c *nameCell) Set(v nameView) {
	if v.name == c.name.Text() && v.badge == c.badge.text.Text {
		return
	}
	c.name.Set(textView{text: v.name})
	c.badge.SetText(v.badge)
	c.Refresh() // the badge moves with the name
}

// CreateRenderer implements fyne.Widget.
func (c *nameCell) CreateRenderer() fyne.WidgetRenderer { return &nameRenderer{c} }

type nameRenderer struct{ c *nameCell }

// Layout gives the name the width its text needs, at most what the badge leaves.
func (r *nameRenderer) Layout(size fyne.Size) {
	var bw float32
	if r.c.badge.Visible() {
		bw = r.c.badge.MinSize().Width
	}
	// A cell exactly as wide as its text and padding still cuts it: leave a little more.
	text := fyne.MeasureText(r.c.name.Text(), theme.TextSize(), fyne.TextStyle{Bold: true}).Width +
		2*theme.InnerPadding() + 4
	nw := max(min(text, size.Width-bw), 0)
	r.c.name.Move(fyne.NewPos(0, 0))
	r.c.name.Resize(fyne.NewSize(nw, size.Height))
	bh := r.c.badge.MinSize().Height
	r.c.badge.Move(fyne.NewPos(nw, (size.Height-bh)/2))
	r.c.badge.Resize(fyne.NewSize(bw, bh))
}

func (r *nameRenderer) MinSize() fyne.Size {
	n, b := r.c.name.MinSize(), r.c.badge.MinSize()
	if !r.c.badge.Visible() {
		b = fyne.Size{}
	}
	return fyne.NewSize(n.Width+b.Width, max(n.Height, b.Height))
}
func (r *nameRenderer) Refresh() {
	r.Layout(r.c.Size())
	r.c.name.Refresh()
	r.c.badge.Refresh()
}
func (r *nameRenderer) Objects() []fyne.CanvasObject {
	return []fyne.CanvasObject{r.c.name, r.c.badge}
}
func (r *nameRenderer) Destroy() {}

// stateCell is a state: a dot and a text in the same tone.
type stateCell struct {
	widget.BaseWidget
	dot  *mark
	text *textCell
	box  *fyne.Container
}

func newStateCell() *stateCell {
	c := &stateCell{dot: newDot(), text: newTextCell(fyne.TextAlignLeading)}
	c.box = container.NewBorder(nil, nil, c.dot, nil, c.text)
	c.ExtendBaseWidget(c)
	return c
}

// Set shows v.
func (c *stateCell) Set(v textView) {
	c.dot.SetTone(v.tone)
	c.text.Set(v)
}

// CreateRenderer implements fyne.Widget.
func (c *stateCell) CreateRenderer() fyne.WidgetRenderer { return widget.NewSimpleRenderer(c.box) }

// quotaView is what a quota cell shows: the share used (0..1) and its figure, or only a text
// ("–") when bar is false.
type quotaView struct {
	bar  bool
	used float64
	text textView
}

// quotaCell is a usage window: a small bar coloured by how much is used, and its figure
// beside it ("37% · resets 17:20"), readable on any fill.
type quotaCell struct {
	widget.BaseWidget
	progress *widget.ProgressBar
	over     *container.ThemeOverride
	barBox   *fyne.Container
	figure   *textCell
	box      *fyne.Container
	shown    quotaView
}

// quotaBarWidth is the width of a quota cell's bar.
const quotaBarWidth = 40

func newQuotaCell() *quotaCell {
	c := &quotaCell{progress: widget.NewProgressBar(), figure: newTextCell(fyne.TextAlignLeading)}
	c.progress.TextFormatter = func() string { return "" }
	c.over = container.NewThemeOverride(container.New(layout.NewCustomPaddedLayout(7, 7, 0, 0), c.progress), barTheme{})
	c.barBox = container.New(&sized{min: fyne.NewSize(quotaBarWidth, 0)}, c.over)
	c.barBox.Hide()
	c.box = container.NewBorder(nil, nil, c.barBox, nil, c.figure)
	c.ExtendBaseWidget(c)
	return c
}

// Set shows v.
func (c *quotaCell) Set(v quotaView) {
	c.figure.Set(v.text)
	if v.bar != c.barBox.Visible() {
		setVisible(c.barBox, v.bar)
		c.box.Refresh() // lay the figure out beside the bar, or in its place
	}
	if v.bar && (v.used != c.shown.used || !c.shown.bar) {
		c.over.Theme = barTheme{level: v.used}
		c.progress.Value = v.used
		c.over.Refresh()
		redraws.Add(1)
	}
	c.shown = v
}

// Used is the share the bar shows (tests).
func (c *quotaCell) Used() (float64, bool) { return c.shown.used, c.shown.bar }

// CreateRenderer implements fyne.Widget.
func (c *quotaCell) CreateRenderer() fyne.WidgetRenderer { return widget.NewSimpleRenderer(c.box) }
