package window

import (
	"errors"
	"image/color"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/codexrelay/codexrelay/app"
)

// Small building blocks shared by the windows.

// redraws counts the widget refreshes the windows asked for. Every setter here and in cells.go
// refreshes only what changed and counts it, so a test can check that showing an unchanged
// view redraws nothing.
var redraws atomic.Int64

// widthBox stacks objects vertically at least w wide (so wrapped labels get a width).
func widthBox(w float32, objs ...fyne.CanvasObject) fyne.CanvasObject {
	strut := canvas.NewRectangle(color.Transparent)
	strut.SetMinSize(fyne.NewSize(w, 0))
	return container.NewStack(strut, container.NewVBox(objs...))
}

// sized is a layout that reports at least a given minimum size and gives its objects all
// of its space.
type sized struct {
	min fyne.Size
}

func (l *sized) MinSize(objs []fyne.CanvasObject) fyne.Size {
	m := l.min
	for _, o := range objs {
		if o.Visible() {
			m = m.Max(o.MinSize())
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

// note is secondary text (the theme's readable hint colour), wrapped.
func note(text string) *widget.RichText {
	r := widget.NewRichText(&widget.TextSegment{Text: text, Style: widget.RichTextStyle{
		ColorName: theme.ColorNamePlaceHolder, Inline: true, SizeName: theme.SizeNameText}})
	r.Wrapping = fyne.TextWrapWord
	return r
}

// setNote changes a note's text, redrawing it only when it changed.
func setNote(r *widget.RichText, text string) {
	seg := r.Segments[0].(*widget.TextSegment)
	if seg.Text != text {
		seg.Text = text
		r.Refresh()
		redraws.Add(1)
	}
}

// dim is secondary text in the hint colour, a little smaller than body text.
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
		redraws.Add(1)
	}
}

// setText changes a label's text, redrawing it only when it changed.
func setText(l *widget.Label, text string) {
	if l.Text != text {
		l.SetText(text)
		redraws.Add(1)
	}
}

// setVisible shows or hides o, touching it only when its visibility changes.
func setVisible(o fyne.CanvasObject, visible bool) {
	switch {
	case visible && !o.Visible():
		o.Show()
		redraws.Add(1)
	case !visible && o.Visible():
		o.Hide()
		redraws.Add(1)
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
	if l.Importance != imp {
		l.Importance = imp
		l.Refresh()
		redraws.Add(1)
	}
	setText(l, text)
	setVisible(l, text != "")
}

// setError shows err on an error label as a sentence, or hides the label for nil.
func setError(l *widget.Label, err error) {
	if err == nil {
		setMessage(l, "", widget.DangerImportance)
		return
	}
	setMessage(l, sentence(fieldWords(err)), widget.DangerImportance)
}

// fieldWords is err's message with a setting named as the window labels it, not by its
// command-line key: "“Hold requests up to” must be a number of seconds…", not
// "Hold-seconds must be…" under a field labelled "Hold requests up to".
func fieldWords(err error) string {
	var fe *app.FieldError
	if errors.As(err, &fe) && err.Error() == fe.Error() {
		if st, ok := app.LookupSetting(fe.Field); ok && st.Label != "" {
			return "“" + st.Label + "” " + fe.Msg
		}
	}
	return err.Error()
}

// sentence starts s with a capital letter: app's messages read on from a field's name
// ("account name ... is not valid") and stand alone on screen.
func sentence(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	if n == 0 || !unicode.IsLower(r) {
		return s
	}
	return string(unicode.ToUpper(r)) + s[n:]
}

// hint is the small line under a form field that says what to type ("e.g. …"): kept out of
// the field itself, so that an empty field never looks filled in.
func hint(text string) *widget.RichText {
	r := widget.NewRichText(&widget.TextSegment{Text: text, Style: widget.RichTextStyle{
		ColorName: theme.ColorNamePlaceHolder, Inline: true, SizeName: theme.SizeNameCaptionText}})
	r.Wrapping = fyne.TextWrapWord
	return r
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

// copyRow is a value the user may need elsewhere (a link, a code, a command) with a Copy
// button beside it.
func copyRow(value *widget.Label, copyText func(string)) fyne.CanvasObject {
	value.Selectable = true
	value.Truncation = fyne.TextTruncateEllipsis
	b := widget.NewButtonWithIcon("Copy", theme.ContentCopyIcon(), func() { copyText(value.Text) })
	return container.NewBorder(nil, nil, nil, b, value)
}

// maxWidth is a layout that centres its objects horizontally, at most width wide, so that
// text in a wide window keeps a readable line length.
type maxWidth struct{ width float32 }

func (l *maxWidth) MinSize(objs []fyne.CanvasObject) fyne.Size {
	var m fyne.Size
	for _, o := range objs {
		m = m.Max(o.MinSize())
	}
	return m
}

func (l *maxWidth) Layout(objs []fyne.CanvasObject, size fyne.Size) {
	w := min(size.Width, l.width)
	for _, o := range objs {
		o.Move(fyne.NewPos((size.Width-w)/2, 0))
		o.Resize(fyne.NewSize(w, size.Height))
	}
}

// noteFor is how long a note about an action the user took stays (a success; an error stays
// errorNoteFor): long enough to read, then it gives its room back. They stayed ten minutes and
// more, until the next action replaced them.
const (
	noteFor      = 15 * time.Second
	errorNoteFor = time.Minute
)

// fleeting is a message label that clears itself: set says something at now, and the next
// view's expire takes it away once its time is up. set asks for that view then (wake), since
// the windows sleep while nothing changes.
type fleeting struct {
	*widget.Label
	until time.Time
	wake  func()
}

func newFleeting(wake func()) *fleeting {
	l := widget.NewLabel("")
	l.Wrapping = fyne.TextWrapWord
	l.Hide()
	return &fleeting{Label: l, wake: wake}
}

// set shows text with imp from now on ("" hides it).
func (n *fleeting) set(text string, imp widget.Importance, now time.Time) {
	d := noteFor
	if imp == widget.DangerImportance {
		d = errorNoteFor
	}
	n.until = now.Add(d)
	setMessage(n.Label, text, imp)
	if text != "" && n.wake != nil {
		time.AfterFunc(d, n.wake)
	}
}

// expire hides the note once its time is up at now; it says whether it did.
func (n *fleeting) expire(now time.Time) bool {
	if n.Text == "" || now.Before(n.until) {
		return false
	}
	setMessage(n.Label, "", n.Importance)
	return true
}

// collapsible is a section that opens and closes under a header button whose caret says which
// it is: pointing right while closed, down while open (as file managers and browsers' details
// do; a down caret on a closed section read as "open").
type collapsible struct {
	header  *widget.Button
	content fyne.CanvasObject
	box     *fyne.Container
	open    bool
	// toggled, when set, runs after the section opened or closed.
	toggled func(open bool)
}

func newCollapsible(title string, content fyne.CanvasObject) *collapsible {
	c := &collapsible{content: content}
	c.header = widget.NewButtonWithIcon(title, caretIcon(false), func() { c.setOpen(!c.open) })
	c.header.Alignment = widget.ButtonAlignLeading
	c.header.Importance = widget.LowImportance
	content.Hide()
	c.box = container.NewVBox(c.header, content)
	return c
}

// caretIcon is a section header's caret: right while closed, down while open.
func caretIcon(open bool) fyne.Resource {
	if open {
		return theme.MenuDropDownIcon()
	}
	return theme.MenuExpandIcon()
}

// setOpen opens or closes the section.
func (c *collapsible) setOpen(open bool) {
	if open == c.open {
		return
	}
	c.open = open
	c.header.SetIcon(caretIcon(open))
	setVisible(c.content, open)
	c.box.Refresh()
	if c.toggled != nil {
		c.toggled(open)
	}
}
