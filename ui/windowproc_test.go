package ui

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"

	"github.com/codexrelay/codexrelay/app"
	"github.com/codexrelay/codexrelay/app/ledger"
	"github.com/codexrelay/codexrelay/ui/source"
	"github.com/codexrelay/codexrelay/ui/uitest"
)

// fakeControl is a listener that records what it was asked.
type fakeControl struct {
	status          app.ServiceStatus
	pauses, resumes int
	listen          string
	resumeErr       error
}

func (f *fakeControl) Status() app.ServiceStatus { return f.status }
func (f *fakeControl) Pause()                    { f.pauses++; f.status.Paused, f.status.Running = true, false }
func (f *fakeControl) Resume() error             { f.resumes++; return f.resumeErr }
func (f *fakeControl) SetListen(a string) error  { f.listen = a; return nil }

// serveAPI serves a window API over src, ctl and usage; it returns the client.
func serveAPI(t *testing.T, src source.Source, ctl source.RelayControl, usage source.UsageSource) *windowClient {
	t.Helper()
	api := &windowAPI{src: src, ctl: ctl, usage: func() source.UsageSource { return usage }, token: newToken()}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	return newWindowClient(srv.URL, api.token)
}

func asJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// What the window process reads through the window API is what the tray process has.
func TestWindowAPIRoundTrip(t *testing.T) {
	src := uitest.Sample()
	ctl := &fakeControl{status: app.ServiceStatus{Addr: "127.0.0.1:7455", Err: errors.New("the port is taken"), Warning: "pinned"}}
	usage := uitest.SampleUsage()
	c := serveAPI(t, src, ctl, usage)

	if got, want := asJSON(t, c.Stats()), asJSON(t, src.Snapshot); got != want {
		t.Errorf("stats:\n%s\nwant\n%s", got, want)
	}
	if got, want := asJSON(t, c.Traces(1)), asJSON(t, src.Recent[:1]); got != want {
		t.Errorf("traces:\n%s\nwant\n%s", got, want)
	}
	st := c.Status()
	if st.Addr != "127.0.0.1:7455" || st.Err == nil || st.Err.Error() != "the port is taken" || st.Warning != "pinned" {
		t.Errorf("status %+v", st)
	}
	c.Pause()
	if err := c.SetListen("127.0.0.1:7460"); err != nil || ctl.pauses != 1 || ctl.listen != "127.0.0.1:7460" {
		t.Errorf("pause %d, listen %q (%v)", ctl.pauses, ctl.listen, err)
	}
	ctl.resumeErr = errors.New("cannot listen on 127.0.0.1:7455: the port is taken")
	if err := c.Resume(); err == nil || err.Error() != ctl.resumeErr.Error() {
		t.Errorf("resume: %v", err)
	}

	q := ledger.Query{Since: uitest.Now.Add(-7 * 24 * time.Hour), By: "model"}
	want, _ := usage.Summary(t.Context(), q)
	got, err := c.Summary(t.Context(), q)
	if err != nil || asJSON(t, got.Groups) != asJSON(t, want.Groups) || got.Total.Tokens() != want.Total.Tokens() {
		t.Errorf("summary %v: %+v, want %+v", err, got, want)
	}
	days, err := c.Daily(t.Context(), q.Since)
	wantDays, _ := usage.Daily(t.Context(), q.Since)
	if err != nil || asJSON(t, days) != asJSON(t, wantDays) {
		t.Errorf("daily %v: %+v", err, days)
	}
	b, err := c.Burn(t.Context(), "personal")
	if err != nil || b.PrimaryTokensPerPercent != 212_000 {
		t.Errorf("burn %v: %+v", err, b)
	}
	f, err := c.Forecast(t.Context(), []string{"personal", "team"}, uitest.Now)
	if err != nil || !f.Now.Equal(uitest.Now) || !f.RunsOut.Equal(usage.Pool.RunsOut) || f.TokensLastHour != 4_100_000 {
		t.Errorf("forecast %v: %+v", err, f)
	}
	// The ledger's states come through as the errors the Usage window knows.
	usage.Off = true
	if _, err := c.Summary(t.Context(), q); !errors.Is(err, source.ErrUsageOff) {
		t.Errorf("off: %v", err)
	}
	usage.Off = false
	c2 := serveAPI(t, src, ctl, &source.FixedUsage{Err: source.ErrUsageClosed})
	if _, err := c2.Daily(t.Context(), q.Since); !errors.Is(err, source.ErrUsageClosed) {
		t.Errorf("closed: %v", err)
	}
}

// The window API answers only to its token.
func TestWindowAPIWantsItsToken(t *testing.T) {
	c := serveAPI(t, uitest.Sample(), &fakeControl{}, uitest.SampleUsage())
	for _, token := range []string{"", "guess", c.token + "x"} {
		bad := newWindowClient(c.base, token)
		if err := bad.get("/relay/stats", nil, new(any)); err == nil || !strings.Contains(err.Error(), "token") {
			t.Errorf("token %q: %v", token, err)
		}
		if st := bad.Status(); st.Err == nil {
			t.Errorf("token %q: a status without an error", token)
		}
		if err := bad.post("/relay/pause", nil); err == nil {
			t.Errorf("token %q: paused", token)
		}
	}
	// Without the tray process, the window says so instead of a blank state.
	gone := newWindowClient("http://127.0.0.1:9", c.token)
	if st := gone.Status(); !errors.Is(st.Err, errTrayGone) {
		t.Errorf("tray gone: %+v", st)
	}
}

// The windows of a window process show the tray process's relay: its accounts, its listener
// and its pause, read through the window API; and the process ends when its last window
// closes, not before.
func TestWindowProcessShowsTheTraysRelay(t *testing.T) {
	uitest.NeedKeyring(t)
	tray, relay := newTestUI(t, map[string]string{"CODEXRELAY_LISTEN": "127.0.0.1:0"})
	if _, err := relay.AddAccount(app.NewAccount{Name: "work", Kind: "openai", BaseURL: "http://127.0.0.1:9/v1"}, app.Secret{APIKey: "sk-test-1"}); err != nil {
		t.Fatal(err)
	}
	if err := tray.svc.Start(); err != nil {
		t.Fatal(err)
	}
	c := serveAPI(t, relay.Proxy, tray.svc, source.RelayUsage(relay))

	// The window process has its own app over the same settings folder, as the CLI would.
	other, err := app.Open(app.Options{ConfigDir: relay.ConfigDir(), Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	fa := test.NewTempApp(t)
	u := newWindowsUI(fa, other, slog.New(slog.DiscardHandler), c)
	u.async = func(f func()) { f() }
	var ended atomic.Int32
	u.lastClosed = func() { ended.Add(1) }

	u.OpenWindow("dashboard")
	content := u.dashWin.Content()
	mustShow(t, content, "work")
	mustContain(t, content, "Listening on http://"+tray.svc.Status().Addr+"/v1")

	// Paused in the tray: the dashboard says so and its Resume reaches the tray's listener.
	tray.svc.Pause()
	u.refresh()
	mustContain(t, content, "Paused")
	tapButton(t, content, "Resume")
	if !tray.svc.Status().Running {
		t.Fatal("Resume in the window did not resume the tray's listener")
	}

	// (Fyne's test windows have no close button: the intercepts call hideWindow, as a close does
	// under a window manager; the end-to-end run in ui/cmd/screenshot/split.sh closes real ones.)
	u.OpenWindow("accounts")
	u.hideWindow(u.accounts.win)
	if ended.Load() != 0 {
		t.Fatal("the process would end with the dashboard still open")
	}
	u.hideWindow(u.dashWin)
	if ended.Load() != 1 {
		t.Errorf("after the last window closed: ended %d times", ended.Load())
	}
}

// TestHelperWindowProcess is a stand-in window process for the launcher's tests (run as a
// child of the test binary): it speaks the pipe protocol, showing each window at once, and
// ends after the window named "last".
func TestHelperWindowProcess(t *testing.T) {
	if os.Getenv("CODEXRELAY_HELPER_WINDOW") == "" {
		t.Skip("a child process of the launcher's tests")
	}
	r := bufio.NewReader(os.Stdin)
	line, _ := r.ReadString('\n')
	if !strings.HasPrefix(line, "api http://") {
		os.Exit(3)
	}
	name := os.Getenv("CODEXRELAY_HELPER_WINDOW")
	for {
		if name == "die" { // ends before showing its window
			os.Exit(0)
		}
		fmt.Printf("shown %s\n", name)
		if name == "last" {
			os.Exit(0)
		}
		line, err := r.ReadString('\n')
		if err != nil {
			os.Exit(0) // the tray left
		}
		name = strings.TrimPrefix(strings.TrimSpace(line), "open ")
	}
}

func helperLauncher(t *testing.T) (*windowLauncher, *atomic.Int32) {
	t.Helper()
	var starts atomic.Int32
	l := &windowLauncher{
		command: func(name string) *exec.Cmd {
			starts.Add(1)
			cmd := exec.Command(os.Args[0], "-test.run=^TestHelperWindowProcess$")
			cmd.Env = append(os.Environ(), "CODEXRELAY_HELPER_WINDOW="+name)
			cmd.Stderr = io.Discard
			return cmd
		},
		base: "http://127.0.0.1:1", token: "t", log: slog.New(slog.DiscardHandler), patience: 20 * time.Second,
	}
	t.Cleanup(l.Close)
	return l, &starts
}

// One window process at a time: later windows go to the running one; after it ended, the
// next window starts another; one that ends before showing its window is replaced.
func TestWindowLauncherOneProcessAtATime(t *testing.T) {
	l, starts := helperLauncher(t)
	for _, name := range []string{"dashboard", "settings", "usage"} {
		if err := l.open(name); err != nil {
			t.Fatal(err)
		}
	}
	if starts.Load() != 1 {
		t.Fatalf("%d window processes for three windows", starts.Load())
	}
	if err := l.open("last"); err != nil { // it ends after this one
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for l.running() {
		if time.Now().After(deadline) {
			t.Fatal("the ended window process is still counted")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := l.open("accounts"); err != nil || starts.Load() != 2 {
		t.Fatalf("after it ended: %v, %d starts", err, starts.Load())
	}
	l.Close()
	if l.running() {
		t.Error("Close left the window process running")
	}
	if err := l.open("dashboard"); err != errLauncherClosed {
		t.Errorf("after Close: %v", err)
	}

	l2, starts2 := helperLauncher(t)
	if err := l2.open("die"); err == nil || starts2.Load() != 2 {
		t.Errorf("a process that died twice before showing: %v after %d starts", err, starts2.Load())
	}
}

// Each window is centred the first time it shows (Accounts and Settings opened at the screen's
// corner, partly off it), and left where the user put it after that.
func TestWindowsOpenCentred(t *testing.T) {
	u, _ := newTestUI(t, nil)
	centred := map[string]int{}
	u.center = func(w fyne.Window) { centred[w.Title()]++ }
	for range 2 {
		for _, name := range []string{"dashboard", "accounts", "settings", "usage"} {
			u.OpenWindow(name)
		}
	}
	for _, title := range []string{"Codex Relay", "Accounts – Codex Relay", "Settings – Codex Relay", "Usage – Codex Relay"} {
		if centred[title] != 1 {
			t.Errorf("%s centred %d times, want once", title, centred[title])
		}
	}
}
