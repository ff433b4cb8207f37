package window

import (
	"slices"
	"strconv"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/test"
)

// A column is its row of the spec: its title heads it, its cell shows its function of the row,
// a table that fits its columns widens them to their content, and showing the same rows again
// redraws nothing.
func TestTableColumnIsItsSpecRow(t *testing.T) {
	test.NewTempApp(t)
	type pet struct {
		name string
		legs int
	}
	spec := []tableColumn[pet]{
		{title: "Name", min: 40, weight: 1, cell: plainOf(func(p pet) string { return p.name })},
		{title: "Legs", min: 40, align: fyne.TextAlignTrailing,
			cell: plainOf(func(p pet) string { return strconv.Itoa(p.legs) })},
	}
	tb := newListTable(spec, true)
	w := test.NewTempWindow(t, container.NewBorder(tb.header, nil, nil, nil, tb.list))
	w.Resize(fyne.NewSize(500, 300))

	rows := []pet{{"a rather long name for a cat", 4}, {"bird", 2}}
	tb.show(rows)
	var titles []string
	visit(tb.header, func(o fyne.CanvasObject) {
		if c, ok := o.(*textCell); ok {
			titles = append(titles, c.Text())
		}
	})
	if !slices.Equal(titles, []string{"Name", "Legs"}) {
		t.Errorf("titles %q", titles)
	}
	var shown [][]string
	visit(tb.list, func(o fyne.CanvasObject) {
		if r, ok := o.(*tableRow[pet]); ok {
			shown = append(shown, []string{r.cells[0].(*textCell).Text(), r.cells[1].(*textCell).Text()})
		}
	})
	if len(shown) != 2 || !slices.Equal(shown[0], []string{"a rather long name for a cat", "4"}) ||
		!slices.Equal(shown[1], []string{"bird", "2"}) {
		t.Errorf("rows %q", shown)
	}
	if need := cellWidth(rows[0].name, fyne.TextStyle{}); tb.cols.want[0] < need {
		t.Errorf("the names' column wants %v, its longest name %v", tb.cols.want[0], need)
	}

	before := redraws.Load()
	tb.show(slices.Clone(rows))
	if n := redraws.Load() - before; n != 0 {
		t.Errorf("the same rows again: %d redraws", n)
	}
	rows[1].legs = 3
	before = redraws.Load()
	tb.show(rows)
	if n := redraws.Load() - before; n == 0 {
		t.Error("a changed cell did not redraw")
	}
}
