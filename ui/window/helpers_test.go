package window

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"github.com/codexrelay/codexrelay/app"
	"github.com/codexrelay/codexrelay/app/relay"
	"github.com/codexrelay/codexrelay/ui/uitest"
)

// newTestUI is the UI over a real app in a temporary config folder (uitest.Relay), on Fyne's
// test driver. Slow calls run inline, so nothing races with the test.
func newTestUI(t *testing.T, env map[string]string) (*UI, *relay.Relay) {
	t.Helper()
	fa := test.NewTempApp(t)
	relay := uitest.Relay(t, env)
	u := NewWithRelay(fa, relay, slog.New(slog.DiscardHandler))
	u.async = func(f func()) { f() }
	t.Cleanup(u.svc.Stop)
	return u, relay
}

// visit calls f for o and every visible object under it, widgets' rendered parts included.
func visit(o fyne.CanvasObject, f func(fyne.CanvasObject)) {
	if o == nil || !o.Visible() {
		return
	}
	f(o)
	switch x := o.(type) {
	case *fyne.Container:
		for _, c := range x.Objects {
			visit(c, f)
		}
	case fyne.Widget:
		for _, c := range test.WidgetRenderer(x).Objects() {
			visit(c, f)
		}
	}
}

// texts are the texts of the visible labels and buttons under o.
func texts(o fyne.CanvasObject) []string {
	var out []string
	visit(o, func(o fyne.CanvasObject) {
		switch x := o.(type) {
		case *widget.Label:
			out = append(out, x.Text)
		case *widget.Button:
			out = append(out, x.Text)
		case *widget.RichText:
			out = append(out, x.String())
		}
	})
	return out
}

// mustShow fails unless each want is the whole text of a visible label or button under o.
func mustShow(t *testing.T, o fyne.CanvasObject, want ...string) {
	t.Helper()
	got := texts(o)
	for _, w := range want {
		found := false
		for _, g := range got {
			if g == w {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("no visible text %q among %q", w, got)
		}
	}
}

// mustContain fails unless some visible text under o contains each want.
func mustContain(t *testing.T, o fyne.CanvasObject, want ...string) {
	t.Helper()
	all := strings.Join(texts(o), "\n")
	for _, w := range want {
		if !strings.Contains(all, w) {
			t.Errorf("no visible text contains %q in:\n%s", w, all)
		}
	}
}

// overlayTexts are the texts of the topmost overlay (a dialog) on w.
func overlayTexts(t *testing.T, w fyne.Window) string {
	t.Helper()
	top := w.Canvas().Overlays().Top()
	if top == nil {
		t.Fatal("no dialog is showing")
	}
	return strings.Join(texts(top), "\n")
}

// tapButton taps the visible button labelled text under o.
func tapButton(t *testing.T, o fyne.CanvasObject, text string) {
	t.Helper()
	var b *widget.Button
	visit(o, func(o fyne.CanvasObject) {
		if x, ok := o.(*widget.Button); ok && x.Text == text && b == nil {
			b = x
		}
	})
	if b == nil {
		t.Fatalf("no button %q among %q", text, texts(o))
	}
	test.Tap(b)
}

// pressKey sends a key to a window's canvas, as a keyboard would with nothing focused.
func pressKey(w fyne.Window, name fyne.KeyName) {
	if f := w.Canvas().OnTypedKey(); f != nil {
		f(&fyne.KeyEvent{Name: name})
	}
}

// withFakeFirstRun has the UI's first-run action return fr and err instead of running.
func withFakeFirstRun(u *UI, fr app.FirstRun, err error) (calls *int) {
	calls = new(int)
	u.dash.opt.UseCodexLogin = func(context.Context) (app.FirstRun, error) {
		*calls++
		return fr, err
	}
	return calls
}
