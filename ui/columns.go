package ui

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
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
	need := func() float32 {
		var sum float32
		n := 0
		for i, col := range c.spec {
			if shown[i] {
				sum += col.min
				n++
			}
		}
		return sum + columnGap*float32(max(n-1, 0))
	}
	for need() > w {
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
	extra := max(w-need(), 0)
	var weights float32
	for i, col := range c.spec {
		if shown[i] {
			weights += col.weight
		}
	}
	ws := make([]float32, len(c.spec))
	for i, col := range c.spec {
		if shown[i] {
			ws[i] = col.min
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
	for _, col := range c.spec {
		if col.drop == 0 {
			sum += col.min
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
