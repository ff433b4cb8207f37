package ui

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"github.com/codexrelay/codexrelay/app"
	"github.com/codexrelay/codexrelay/proxy"
	"github.com/codexrelay/codexrelay/ui/source"
)

// newTestUI is the UI over a real app in a temporary config folder, on Fyne's test driver.
// The Codex folder and the autostart folder are temporary too: no test writes to the real
// home. Slow calls run inline, so nothing races with the test.
func newTestUI(t *testing.T, env map[string]string) (*UI, *app.App) {
	t.Helper()
	fa := test.NewTempApp(t)
	vars := map[string]string{
		"CODEX_HOME": t.TempDir(),
		// Nothing listens there: no test reaches chatgpt.com or auth.openai.com.
		"CODEXRELAY_CHATGPT_BASE_URL": "http://127.0.0.1:9/backend-api/codex",
		"CODEXRELAY_AUTH_ISSUER":      "http://127.0.0.1:9",
	}
	for k, v := range env {
		vars[k] = v
	}
	// An existing install with the local key off (a folder without a settings file is a new
	// install, whose first change turns the key on): tests that want the key turn it on.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "settings.json"), []byte(`{"generation": 0, "accounts": []}`), 0o600); err != nil {
		t.Fatal(err)
	}
	relay, err := app.Open(app.Options{
		ConfigDir:    dir,
		Getenv:       func(k string) string { return vars[k] },
		AutostartDir: t.TempDir(),
		CallbackAddr: "127.0.0.1:0",
	})
	if err != nil {
		t.Fatal(err)
	}
	u := New(fa, relay, slog.New(slog.DiscardHandler))
	u.async = func(f func()) { f() }
	t.Cleanup(u.svc.Stop)
	return u, relay
}

// needKeyring skips tests that store secrets unless a private Secret Service runs (make test).
func needKeyring(t *testing.T) {
	if os.Getenv("CODEXRELAY_TEST_KEYRING") == "" {
		t.Skip("needs a Secret Service: run through `make test` (CODEXRELAY_TEST_KEYRING)")
	}
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

func menuItem(t *testing.T, m *fyne.Menu, label string) *fyne.MenuItem {
	t.Helper()
	for _, it := range m.Items {
		if it.Label == label {
			return it
		}
	}
	var labels []string
	for _, it := range m.Items {
		labels = append(labels, it.Label)
	}
	t.Fatalf("no menu item %q in %q", label, labels)
	return nil
}

var testNow = time.Date(2026, 3, 12, 14, 32, 10, 0, time.Local)

// sample is a snapshot with three accounts in three states and two recent requests:
// "personal" ready with its quota (served the last request, serves the next), "team" resting
// after its limit until 14:36, "api" whose key was rejected.
func sample() *source.Fixed {
	cool := testNow.Add(4*time.Minute + 32*time.Second)
	return &source.Fixed{
		Snapshot: proxy.Snapshot{
			Listen:     "127.0.0.1:7455",
			LastServed: "personal", Next: "personal",
			Catalog: proxy.CatalogStats{AgeMs: 252_000, Models: 14, SWREnabled: true, StaleMaxAgeMs: 1_800_000,
				TTLMs: 600_000, Refresh: proxy.RefreshCounts{Background: 17, Blocking: 1, Shared: 6}, Refreshes: 19},
			Serialization: proxy.Serialization{Hits: 1912, Misses: 1246, Direct: 58},
			Requests:      proxy.RequestStats{Total: 1284, Errors: 7, Rotations: 23, InFlight: 2, WebSockets: 3, MedianPreparationMs: 0.41},
			Accounts: []proxy.AccountStats{
				{Name: "personal", Kind: proxy.KindChatGPT, State: proxy.StateReady, Requests: 912,
					Quota: &proxy.Quota{PrimaryUsedPercent: 37, SecondaryUsedPercent: 62}},
				{Name: "team", Kind: proxy.KindChatGPT, State: proxy.StateCooldown, CooldownUntil: &cool,
					CooldownReason: proxy.CooldownRateLimit, Requests: 341, LastError: "429 usage_limit_reached"},
				{Name: "api", Kind: proxy.KindOpenAI, State: proxy.StateNeedsLogin, LastError: "401 invalid_api_key"},
			},
		},
		Recent: []proxy.Trace{
			{ID: "t2", Time: testNow.Add(-3 * time.Second), Model: "codex", ResolvedModel: "gpt-5.1-codex", Status: 200,
				Outcome: proxy.OutcomeCompleted, Attempts: []proxy.Attempt{{Account: "team", Status: 429}, {Account: "personal", Status: 200}},
				LatencyBreakdown: proxy.Latency{PreparationMs: 0.38, TotalMs: 4214}},
			{ID: "t1", Time: testNow.Add(-40 * time.Second), Model: "gpt-5.1", Status: 503, Outcome: proxy.OutcomeError,
				Attempts:         []proxy.Attempt{{Account: "api", Status: 401}},
				LatencyBreakdown: proxy.Latency{PreparationMs: 2.5, TotalMs: 96}},
		},
	}
}

func running() app.ServiceStatus { return app.ServiceStatus{Addr: "127.0.0.1:7455", Running: true} }

// labels are the labels of a menu's items ("" for a separator).
func labels(items []*fyne.MenuItem) []string {
	var out []string
	for _, it := range items {
		out = append(out, it.Label)
	}
	return out
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

// receive waits for the next value on ch, failing the test if none comes within 10 s: no test
// waits without a bound, whatever the machine runs (a relay of the developer's own, a busy bus).
func receive[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not come within 10 s", what)
		panic("unreachable")
	}
}
