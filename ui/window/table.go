package window

import (
	"slices"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// A table is a header and rows of type R over flexible columns (columns.go), made from a spec:
// one tableColumn per column, which says how the column is laid out and what its cell shows of
// a row. A new column is its row in the spec, as a setting is its row of app.SettingsTable and
// a diagnostics figure its row of diagnosticsSpec: accountSpec and requestSpec (dashtables.go),
// usageSpecFor, tierSpec and burnSpec (usagewin.go).
//
// A table computes the views of its rows' cells first: a listTable redraws its list only when
// they differ from the ones on screen, and each cell, set again, redraws only what changed.

// tableColumn is one column of a table over rows of type R.
type tableColumn[R any] struct {
	title string
	// min is the least width the column needs; weight is its share of the width beyond the
	// minimums; drop lets it go in a narrow window (0 never, the highest number first).
	min, weight float32
	align       fyne.TextAlign
	drop        int
	// cut columns take what the others leave and their cells may be cut with an ellipsis: a
	// table that fits its columns to their content does not measure theirs (Last error).
	cut bool
	// widest is the most a table that fits its columns to their content widens this one to for
	// its cells (0: no limit); a longer text is cut.
	widest float32
	cell   tableCell[R]
}

// tableCell is a column's cell: the widget it is and what it shows of a row, with the type of
// what it shows erased so that one spec lists cells of different kinds. Make one with textOf,
// plainOf, stateOf, quotaOf or nameOf.
type tableCell[R any] struct {
	make func(align fyne.TextAlign) fyne.CanvasObject
	// view is what the cell shows of a row: a comparable value, so that a row whose views are
	// unchanged redraws nothing.
	view func(R) any
	set  func(cell fyne.CanvasObject, view any)
	// width is the width the cell needs to show view uncut.
	width func(view any) float32
}

// settable is a cell widget that shows a V.
type settable[V any] interface {
	fyne.CanvasObject
	Set(V)
}

// cellOf is a cell made by newCell, showing view(r) for a row r; width is the width a view
// needs uncut.
func cellOf[R any, V comparable, C settable[V]](newCell func(fyne.TextAlign) C, width func(V) float32, view func(R) V) tableCell[R] {
	return tableCell[R]{
		make:  func(align fyne.TextAlign) fyne.CanvasObject { return newCell(align) },
		view:  func(r R) any { return view(r) },
		set:   func(c fyne.CanvasObject, v any) { c.(C).Set(v.(V)) },
		width: func(v any) float32 { return width(v.(V)) },
	}
}

// The kinds of cells.

// textOf is a line of text in a tone.
func textOf[R any](view func(R) textView) tableCell[R] {
	return cellOf(newTextCell, func(v textView) float32 { return cellWidth(v.text, fyne.TextStyle{}) }, view)
}

// plainOf is a line of text in the body colour.
func plainOf[R any](text func(R) string) tableCell[R] {
	return textOf(func(r R) textView { return textView{text: text(r)} })
}

// stateOf is a state: a dot and a text in the same tone.
func stateOf[R any](view func(R) textView) tableCell[R] {
	return cellOf(func(fyne.TextAlign) *stateCell { return newStateCell() }, func(v textView) float32 {
		return dotRoom + compact.Size(theme.SizeNamePadding) + cellWidth(v.text, fyne.TextStyle{})
	}, view)
}

// quotaOf is a usage window: a bar and its figure.
func quotaOf[R any](view func(R) quotaView) tableCell[R] {
	return cellOf(func(fyne.TextAlign) *quotaCell { return newQuotaCell() }, func(q quotaView) float32 {
		w := cellWidth(q.text.text, fyne.TextStyle{})
		if q.bar {
			w += quotaBarWidth + compact.Size(theme.SizeNamePadding)
		}
		return w
	}, view)
}

// nameOf is a name in bold with its badge.
func nameOf[R any](view func(R) nameView) tableCell[R] {
	return cellOf(func(fyne.TextAlign) *nameCell { return newNameCell() }, func(v nameView) float32 {
		w := cellWidth(v.name, fyne.TextStyle{Bold: true})
		if v.badge != "" {
			w += fyne.MeasureText(v.badge, theme.CaptionTextSize(), fyne.TextStyle{}).Width + 2*badgePad
		}
		return w
	}, view)
}

// table is the generic view: the columns and their header, and the rows' cells made from the
// spec. A listTable shows its rows in a list that scrolls (the dashboard), a lineTable as lines
// under the header (the Usage window).
type table[R any] struct {
	spec []tableColumn[R]
	cols *columns
	// fit makes the columns widen to their cells' content (the minimums are then the floor for
	// a narrow window); without it they share the width by their minimums and weights alone.
	fit    bool
	header *fyne.Container
}

func newTable[R any](spec []tableColumn[R], fit bool) *table[R] {
	layout := make([]column, len(spec))
	for i, c := range spec {
		layout[i] = column{title: c.title, min: c.min, weight: c.weight, align: c.align, drop: c.drop}
	}
	t := &table[R]{spec: spec, cols: newColumns(layout...), fit: fit}
	t.header = t.cols.header()
	return t
}

// views are rows' cells' views, a row of them per row; for a table that fits its columns to
// their content, refit says whether the widths changed (every row then lays itself out again).
func (t *table[R]) views(rows []R) (views [][]any, refit bool) {
	views = make([][]any, len(rows))
	for i, r := range rows {
		views[i] = make([]any, len(t.spec))
		for j, c := range t.spec {
			views[i][j] = c.cell.view(r)
		}
	}
	return views, t.fit && t.cols.fit(t.contentWidths(views))
}

// contentWidths are the widths the header and the rows' views need, column by column (a cut
// column's cells are not measured, and a column with a widest takes no more for its cells).
func (t *table[R]) contentWidths(views [][]any) []float32 {
	widths := make([][]float32, len(views))
	for i, row := range views {
		widths[i] = make([]float32, len(t.spec))
		for j, c := range t.spec {
			switch {
			case c.cut:
			case c.widest > 0:
				widths[i][j] = min(c.cell.width(row[j]), c.widest)
			default:
				widths[i][j] = c.cell.width(row[j])
			}
		}
	}
	return contentWidths(t.cols.spec, widths)
}

// listTable is a table whose rows are a list, which scrolls.
type listTable[R any] struct {
	*table[R]
	rows [][]any // the rows on screen: each cell's view, column by column
	list *widget.List
}

func newListTable[R any](spec []tableColumn[R], fit bool) *listTable[R] {
	t := &listTable[R]{table: newTable(spec, fit)}
	t.cols.margin = listMargin
	t.list = widget.NewList(
		func() int { return len(t.rows) },
		func() fyne.CanvasObject { return t.newRow() },
		func(id widget.ListItemID, o fyne.CanvasObject) {
			if id < len(t.rows) {
				o.(*tableRow[R]).set(t.rows[id])
			}
		})
	t.list.OnSelected = func(widget.ListItemID) { t.list.UnselectAll() } // a read-only view
	return t
}

// show puts rows on screen, redrawing the list only when a row's views changed. When the
// columns' widths change, every row is set again and lays itself out at the new widths.
func (t *listTable[R]) show(rows []R) {
	views, refit := t.views(rows)
	if refit {
		t.header.Layout.Layout(t.header.Objects, t.header.Size())
		t.rows = nil
	}
	if !slices.EqualFunc(views, t.rows, slices.Equal[[]any]) {
		t.rows = views
		t.list.Refresh()
		redraws.Add(1)
	}
}

// lineTable is a table whose rows are lines under its header, every one shown (a table in a
// window that scrolls as a whole): a line per row, added as rows need them and hidden when
// fewer show.
type lineTable[R any] struct {
	*table[R]
	lines []*tableRow[R]
	box   *fyne.Container
	// most is the most rows the table shows, its lines made at once (0: as many as it is given).
	most int
	// none shows instead of the rows while there are none, below the header; without it the
	// header hides then.
	none fyne.CanvasObject
}

// newLineTable is a table of spec showing at most most rows (0: any number), with none shown
// while there are none (nil: the table hides). A table with a none line has a most.
func newLineTable[R any](spec []tableColumn[R], fit bool, most int, none fyne.CanvasObject) *lineTable[R] {
	t := &lineTable[R]{table: newTable(spec, fit), most: most, none: none}
	objs := []fyne.CanvasObject{t.header}
	for range most {
		l := t.newRow()
		l.Hide()
		t.lines = append(t.lines, l)
		objs = append(objs, l)
	}
	if none != nil {
		objs = append(objs, none)
	}
	t.box = container.NewVBox(objs...)
	return t
}

// Set shows rows (at most most), redrawing only the cells that changed.
func (t *lineTable[R]) Set(rows []R) {
	if t.most > 0 && len(rows) > t.most {
		rows = rows[:t.most]
	}
	for len(t.lines) < len(rows) {
		l := t.newRow()
		t.lines = append(t.lines, l)
		t.box.Add(l)
		redraws.Add(1)
	}
	views, refit := t.views(rows)
	if refit {
		t.box.Refresh() // its width follows the content; the header and the rows are laid out again
	}
	for i, l := range t.lines {
		if i >= len(views) {
			setVisible(l, false)
			continue
		}
		l.set(views[i])
		setVisible(l, true)
	}
	if t.none != nil {
		setVisible(t.none, len(rows) == 0)
	} else {
		setVisible(t.header, len(rows) > 0)
	}
}

// names are the first column's texts of the rows shown (tests).
func (t *lineTable[R]) names() []string {
	var out []string
	for _, l := range t.lines {
		if l.Visible() {
			out = append(out, l.cells[0].(*textCell).Text())
		}
	}
	return out
}

// tableRow is one row of a table: a cell per column.
type tableRow[R any] struct {
	widget.BaseWidget
	t     *table[R]
	cells []fyne.CanvasObject
	box   *fyne.Container
	gen   int // the columns' widths the row was laid out at
}

func (t *table[R]) newRow() *tableRow[R] {
	r := &tableRow[R]{t: t, cells: make([]fyne.CanvasObject, len(t.spec))}
	for i, c := range t.spec {
		r.cells[i] = c.cell.make(c.align)
	}
	r.box = t.cols.row(r.cells...)
	r.ExtendBaseWidget(r)
	return r
}

// set shows a row's views.
func (r *tableRow[R]) set(views []any) {
	for i, c := range r.t.spec {
		c.cell.set(r.cells[i], views[i])
	}
	r.t.cols.relayout(r.box, &r.gen)
}

// CreateRenderer implements fyne.Widget.
func (r *tableRow[R]) CreateRenderer() fyne.WidgetRenderer {
	return widget.NewSimpleRenderer(r.box)
}

// contentWidths are the widths the header and the rows need, column by column.
func contentWidths(spec []column, rows [][]float32) []float32 {
	ws := make([]float32, len(spec))
	for i, col := range spec {
		ws[i] = cellWidth(col.title, fyne.TextStyle{Bold: true})
	}
	for _, r := range rows {
		for i := range min(len(r), len(ws)) {
			ws[i] = max(ws[i], r[i])
		}
	}
	return ws
}
