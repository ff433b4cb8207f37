package ui

import (
	"image/color"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// Small building blocks shared by the windows.

// widthBox stacks objects vertically at least w wide (so wrapped labels get a width).
func widthBox(w float32, objs ...fyne.CanvasObject) fyne.CanvasObject {
	strut := canvas.NewRectangle(color.Transparent)
	strut.SetMinSize(fyne.NewSize(w, 0))
	return container.NewStack(strut, container.NewVBox(objs...))
}

// sized is a container that reports at least a given minimum size; change it with setMin.
type sized struct {
	min fyne.Size
}

func (l *sized) MinSize(objs []fyne.CanvasObject) fyne.Size {
	m := l.min
	for _, o := range objs {
		if o.Visible() {
			m = m.Max(fyne.NewSize(o.MinSize().Width, 0))
		}
	}
	return m
}

func (l *sized) Layout(objs []fyne.CanvasObject, size fyne.Size) {
	for _, o := range objs {
		o.Move(fyne.NewPos(0, 0))
		o.Resize(size)
	}
}

// heading is a bold section title.
func heading(text string) *widget.Label {
	return widget.NewLabelWithStyle(text, fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
}

// note is secondary text (placeholder colour), wrapped.
func note(text string) *widget.RichText {
	r := widget.NewRichText(&widget.TextSegment{Text: text, Style: widget.RichTextStyle{
		ColorName: theme.ColorNamePlaceHolder, Inline: true, SizeName: theme.SizeNameText}})
	r.Wrapping = fyne.TextWrapWord
	return r
}

// dim is secondary text in the placeholder colour, a little smaller than body text.
func dim(text string) *canvas.Text {
	t := canvas.NewText(text, theme.Color(theme.ColorNamePlaceHolder))
	t.TextSize = theme.TextSize() - 1
	return t
}

func setDim(t *canvas.Text, text string) {
	if t.Text != text {
		t.Text = text
		t.Color = theme.Color(theme.ColorNamePlaceHolder)
		t.Refresh()
	}
}

// errorLabel is an inline error message, hidden while empty.
func errorLabel() *widget.Label {
	l := widget.NewLabel("")
	l.Wrapping = fyne.TextWrapWord
	l.Importance = widget.DangerImportance
	l.Hide()
	return l
}

// setMessage shows text on l (hiding it when empty) with the given importance.
func setMessage(l *widget.Label, text string, imp widget.Importance) {
	l.Importance = imp
	l.SetText(text)
	if text == "" {
		l.Hide()
	} else {
		l.Show()
	}
}

// setError shows err on an error label, or hides the label for nil.
func setError(l *widget.Label, err error) {
	if err == nil {
		setMessage(l, "", widget.DangerImportance)
		return
	}
	setMessage(l, err.Error(), widget.DangerImportance)
}

// code is selectable text on an input-coloured background, for commands and config. It is
// set in the body font: Fyne 2.7 clips the monospace underscore on all but the last line of a
// multi-line label or text grid, and a config without its underscores would mislead.
func code(text string) (*widget.Label, fyne.CanvasObject) {
	l := widget.NewLabel(text)
	l.Selectable = true
	bg := canvas.NewRectangle(theme.Color(theme.ColorNameInputBackground))
	bg.CornerRadius = theme.InputRadiusSize()
	return l, container.NewStack(bg, l)
}

// stat is one "name ... value" row of a panel; the value is right-aligned.
type stat struct {
	name  *widget.Label
	value *widget.Label
	row   fyne.CanvasObject
}

func newStat(name string) *stat {
	s := &stat{name: widget.NewLabel(name), value: widget.NewLabel("–")}
	s.value.Alignment = fyne.TextAlignTrailing
	s.value.TextStyle.Bold = true
	s.row = container.NewBorder(nil, nil, s.name, s.value)
	return s
}

func (s *stat) set(text string) {
	if s.value.Text != text {
		s.value.SetText(text)
	}
}

// panel is a titled, rounded box of stats.
func panel(title string, stats ...*stat) fyne.CanvasObject {
	rows := []fyne.CanvasObject{heading(title), widget.NewSeparator()}
	for _, s := range stats {
		rows = append(rows, s.row)
	}
	bg := canvas.NewRectangle(theme.Color(theme.ColorNameInputBackground))
	bg.CornerRadius = theme.InputRadiusSize() * 2
	return container.NewStack(bg, container.NewPadded(container.NewVBox(rows...)))
}

// compact is the app's theme with tighter padding, for the dense dashboard.
type compact struct{}

func base() fyne.Theme { return fyne.CurrentApp().Settings().Theme() }

func (compact) Color(n fyne.ThemeColorName, v fyne.ThemeVariant) color.Color {
	return base().Color(n, v)
}
func (compact) Font(s fyne.TextStyle) fyne.Resource     { return base().Font(s) }
func (compact) Icon(n fyne.ThemeIconName) fyne.Resource { return base().Icon(n) }
func (compact) Size(n fyne.ThemeSizeName) float32 {
	switch n {
	case theme.SizeNamePadding:
		return 3
	case theme.SizeNameInnerPadding:
		return 4
	}
	return base().Size(n)
}
