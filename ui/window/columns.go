package window

import (
	"slices"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
)

// column describes one column of a table whose columns flex with the window.
type column struct {
	title string
	// min is the least width the column needs; weight is its share of the width beyond
	// the minimums.
	min, weight float32
	align       fyne.TextAlign
	// drop lets the column go when the window is too narrow for every minimum: 0 never,
	// otherwise the highest number goes first.
	drop int
}

// columns lays out a table's header and rows so that their cells line up and fill the width
// they are given: each column gets its minimum and the rest is shared by weight; below the sum
// of the minimums, droppable columns go. Every row of a table uses the same columns.
type columns struct {
	spec []column
	// margin is left free after the last column: a list draws its scroll bar over its rows.
	margin float32
	width  float32   // the width widths were computed for
	widths []float32 // one per column, 0 for a dropped one
	// want is, per column, the width its widest cell needs to show uncut (0: its minimum will
	// do); a table sets it from the rows it shows.
	want []float32
	// grow makes the table as wide as its content wants (a table beside others, which would
	// otherwise get only its minimum); a table that fills a window's width leaves it false.
	grow bool
	// gen counts the changes of want: a row laid out at an older one lays itself out again.
	gen int
}

// relayout lays a row of these columns out again when the widths changed since it last was
// (gen is the row's record of that).
func (c *columns) relayout(row *fyne.Container, gen *int) {
	if *gen != c.gen {
		*gen = c.gen
		row.Layout.Layout(row.Objects, row.Size())
	}
}

// fit sets the widths the columns' contents need (one per column, 0 for none) and reports
// whether they changed: the rows are then laid out again.
func (c *columns) fit(want []float32) bool {
	if slices.Equal(want, c.want) {
		return false
	}
	c.want = slices.Clone(want)
	c.widths = nil
	c.gen++
	return true
}

// cellWidth is the width a text cell needs to show s uncut (its padding and a little more: a
// cell exactly as wide as its text and padding still cuts it). Tables are in the compact theme.
func cellWidth(s string, style fyne.TextStyle) float32 {
	if s == "" {
		return 0
	}
	return fyne.MeasureText(s, theme.TextSize(), style).Width + 2*compact.Size(theme.SizeNameInnerPadding) + 4
}

// columnGap is the space between two cells (the cells pad their text as well).
const columnGap = 6

func newColumns(spec ...column) *columns { return &columns{spec: spec} }

// listMargin is the room a list's scroll bar takes over its rows' right end.
const listMargin = 12

// widthsFor returns the columns' widths in a row w wide.
func (c *columns) widthsFor(rowWidth float32) []float32 {
	if c.widths != nil && rowWidth == c.width {
		return c.widths
	}
	w := rowWidth - c.margin
	shown := make([]bool, len(c.spec))
	for i := range shown {
		shown[i] = true
	}
	// need is the width the shown columns take at their minimums, or (wanted) at what their
	// content wants.
	need := func(wanted bool) float32 {
		var sum float32
		n := 0
		for i, col := range c.spec {
			if shown[i] {
				if wanted && i < len(c.want) {
					sum += max(col.min, c.want[i])
				} else {
					sum += col.min
				}
				n++
			}
		}
		return sum + columnGap*float32(max(n-1, 0))
	}
	// Columns go, the least important first, until the others show their content uncut: a
	// column left in at the cost of cutting every other one helps nobody.
	for need(true) > w {
		drop := -1
		for i, col := range c.spec {
			if shown[i] && col.drop > 0 && (drop < 0 || col.drop > c.spec[drop].drop) {
				drop = i
			}
		}
		if drop < 0 {
			break
		}
		shown[drop] = false
	}
	// Each shown column first gets what its content wants (at least its minimum); when the
	// width does not reach that, every column gets its minimum and the same share of the way
	// to what it wants. What is left over is shared by weight.
	base := make([]float32, len(c.spec))
	var mins, wants, weights float32
	for i, col := range c.spec {
		if shown[i] {
			base[i] = col.min
			if i < len(c.want) {
				base[i] = max(col.min, c.want[i])
			}
			mins += col.min
			wants += base[i]
			weights += col.weight
		}
	}
	room := max(w-need(false)+mins, mins) // the width for the cells themselves
	share := float32(1)
	if wants > room && wants > mins {
		share = (room - mins) / (wants - mins)
	}
	extra := max(room-wants, 0)
	ws := make([]float32, len(c.spec))
	for i, col := range c.spec {
		if shown[i] {
			ws[i] = col.min + (base[i]-col.min)*share
			if weights > 0 {
				ws[i] += extra * col.weight / weights
			}
		}
	}
	c.width, c.widths = rowWidth, ws
	return ws
}

// minWidth is the width of the columns that never go, at their minimums.
func (c *columns) minWidth() float32 {
	var sum float32
	n := 0
	for i, col := range c.spec {
		if col.drop == 0 {
			w := col.min
			if c.grow && i < len(c.want) {
				w = max(w, c.want[i])
			}
			sum += w
			n++
		}
	}
	return sum + columnGap*float32(max(n-1, 0)) + c.margin
}

// row puts one cell per column into a container laid out by the columns.
func (c *columns) row(cells ...fyne.CanvasObject) *fyne.Container {
	return container.New(rowLayout{c}, cells...)
}

// header is the row of column titles, in bold.
func (c *columns) header() *fyne.Container {
	cells := make([]fyne.CanvasObject, len(c.spec))
	for i, col := range c.spec {
		t := newBoldCell(col.align)
		t.Set(textView{text: col.title})
		cells[i] = t
	}
	return c.row(cells...)
}

// rowLayout places a row's cells at their columns' offsets; a dropped column's cell hides.
type rowLayout struct{ c *columns }

func (l rowLayout) MinSize(objs []fyne.CanvasObject) fyne.Size {
	var h float32
	for _, o := range objs {
		h = max(h, o.MinSize().Height)
	}
	return fyne.NewSize(l.c.minWidth(), h)
}

func (l rowLayout) Layout(objs []fyne.CanvasObject, size fyne.Size) {
	ws := l.c.widthsFor(size.Width)
	var x float32
	for i, o := range objs {
		if i >= len(ws) || ws[i] == 0 {
			if o.Visible() {
				o.Hide()
			}
			continue
		}
		if !o.Visible() {
			o.Show()
		}
		o.Move(fyne.NewPos(x, 0))
		o.Resize(fyne.NewSize(ws[i], size.Height))
		x += ws[i] + columnGap
	}
}
