// Command screenshot shows the dashboard with prepared figures in a real window, for the
// README's screenshot (`make screenshot` runs it under Xvfb and captures the window). It never
// starts a proxy: the dashboard reads a fixed snapshot through ui.Fixed.
package main

import (
	"flag"
	"log"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"fyne.io/fyne/v2"
	fyneapp "fyne.io/fyne/v2/app"

	"github.com/codexrelay/codexrelay/app"
	"github.com/codexrelay/codexrelay/proxy"
	"github.com/codexrelay/codexrelay/ui"
)

func main() {
	wait := flag.Duration("for", 0, "quit after this long (0 = stay until the window closes)")
	window := flag.String("window", "dashboard", "what to show: dashboard, empty (the dashboard before any account), settings or accounts")
	flag.Parse()

	now := time.Date(2026, 3, 12, 14, 32, 10, 0, time.Local)
	fa := fyneapp.NewWithID("io.github.codexrelay.screenshot")
	if *wait > 0 {
		go func() {
			time.Sleep(*wait)
			fyne.Do(fa.Quit)
		}()
	}
	if *window != "dashboard" {
		showWithApp(fa, *window)
		return
	}
	d := ui.NewDashboard(fixture(now), ui.DashboardOptions{
		Status:       func() app.ServiceStatus { return app.ServiceStatus{Addr: "127.0.0.1:7455", Running: true} },
		OpenAccounts: func() {},
		OpenSettings: func() {},
		Now:          func() time.Time { return now },
	})
	w := fa.NewWindow("Codex Relay")
	w.SetContent(d.Content())
	w.Resize(ui.DashboardSize)
	d.Refresh()
	w.ShowAndRun()
}

// showWithApp shows a window of the real UI over a fresh app in a temporary folder (no
// account, nothing listening), for a look at the empty dashboard and the forms.
func showWithApp(fa fyne.App, window string) {
	dir, err := os.MkdirTemp("", "codexrelay-shot-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	env := map[string]string{"CODEX_HOME": filepath.Join(dir, "codex")}
	relay, err := app.Open(app.Options{ConfigDir: dir, Getenv: func(k string) string { return env[k] },
		AutostartDir: filepath.Join(dir, "autostart")})
	if err != nil {
		log.Fatal(err)
	}
	u := ui.New(fa, relay, slog.New(slog.DiscardHandler))
	switch window {
	case "empty":
		u.ShowDashboard()
	case "settings":
		u.ShowSettings()
	case "accounts":
		u.ShowAccounts()
	default:
		log.Fatalf("unknown window %q", window)
	}
	fa.Run()
}

// fixture is a busy afternoon: three accounts (one ready with its quota, one cooling down,
// one needing a sign-in), a warm catalog and eight recent requests.
func fixture(now time.Time) ui.Fixed {
	at := func(d time.Duration) time.Time { return now.Add(d) }
	cool := at(4*time.Minute + 32*time.Second)
	snap := proxy.Snapshot{
		Listen:   "127.0.0.1:7455",
		UptimeMs: (3*time.Hour + 12*time.Minute).Milliseconds(),
		Catalog: proxy.CatalogStats{
			AgeMs: 252_000, Models: 14, SWREnabled: true,
			StaleMaxAgeMs: 1_800_000, TTLMs: 600_000,
			Refresh:   proxy.RefreshCounts{Background: 17, Blocking: 1, Shared: 6},
			Refreshes: 19,
		},
		Serialization: proxy.Serialization{Hits: 1912, Misses: 1246, Direct: 58},
		Requests: proxy.RequestStats{
			Total: 1284, Errors: 7, Rotations: 23, InFlight: 2, MedianPreparationMs: 0.41,
		},
		Accounts: []proxy.AccountStats{
			{
				Name: "personal", Kind: proxy.KindChatGPT, API: proxy.APIResponses, State: proxy.StateReady,
				Requests: 912,
				Quota: &proxy.Quota{
					PrimaryUsedPercent: 37, PrimaryResetsAt: at(2*time.Hour + 48*time.Minute),
					SecondaryUsedPercent: 62, SecondaryResetsAt: at(3*24*time.Hour + 5*time.Hour),
					FetchedAt: at(-40 * time.Second),
				},
			},
			{
				Name: "team", Kind: proxy.KindChatGPT, API: proxy.APIResponses, State: proxy.StateCooldown,
				CooldownUntil: &cool, Requests: 341, Failures: 4,
				LastError: "429 usage_limit_reached: the 5-hour limit resets at 14:36",
				Quota: &proxy.Quota{
					PrimaryUsedPercent: 100, PrimaryResetsAt: cool,
					SecondaryUsedPercent: 81, SecondaryResetsAt: at(5*24*time.Hour + 2*time.Hour),
					FetchedAt: at(-2 * time.Minute),
				},
			},
			{
				Name: "openai-api", Kind: proxy.KindOpenAI, API: proxy.APIResponses, State: proxy.StateNeedsLogin,
				Requests: 31, Failures: 3,
				LastError: "401 invalid_api_key: the key was revoked, replace it in Accounts…",
			},
		},
	}
	type tr struct {
		ago            time.Duration
		model, resolve string
		attempts       []proxy.Attempt
		status         int
		outcome        string
		prep, total    float64
	}
	ok := func(acct string, ms float64) proxy.Attempt { return proxy.Attempt{Account: acct, Status: 200, Ms: ms} }
	limited := proxy.Attempt{Account: "team", Status: 429, Ms: 212}
	rows := []tr{
		{3 * time.Second, "gpt-5.1-codex", "", []proxy.Attempt{ok("personal", 4210)}, 200, "completed", 0.38, 4214},
		{19 * time.Second, "codex", "gpt-5.1-codex", []proxy.Attempt{ok("personal", 2875)}, 200, "completed", 0.44, 2879},
		{47 * time.Second, "gpt-5.1-codex", "", []proxy.Attempt{limited, ok("personal", 6120)}, 200, "completed", 0.41, 6338},
		{68 * time.Second, "gpt-5.1-codex-mini", "", []proxy.Attempt{limited, ok("personal", 1432)}, 200, "completed", 0.36, 1651},
		{2*time.Minute + 5*time.Second, "gpt-5.1-codex", "", []proxy.Attempt{{Account: "openai-api", Status: 401, Ms: 95}, limited, ok("personal", 3904)}, 200, "completed", 0.47, 4215},
		{3*time.Minute + 40*time.Second, "gpt-5.1", "", []proxy.Attempt{ok("team", 980)}, 200, "completed", 0.29, 985},
		{4*time.Minute + 12*time.Second, "gpt-5.1-codex", "", []proxy.Attempt{ok("team", 12840)}, 200, "canceled", 0.52, 9120},
		{6*time.Minute + 58*time.Second, "codex", "gpt-5.1-codex", []proxy.Attempt{ok("team", 5310)}, 200, "completed", 1.9, 5322},
	}
	traces := make([]proxy.Trace, len(rows))
	for i, r := range rows {
		traces[i] = proxy.Trace{
			Time: at(-r.ago), Route: "/v1/responses", Model: r.model, ResolvedModel: r.resolve,
			Stream: true, Status: r.status, Outcome: r.outcome, Attempts: r.attempts,
			LatencyBreakdown: proxy.Latency{PreparationMs: r.prep, TotalMs: r.total},
		}
	}
	return ui.Fixed{Snapshot: snap, Recent: traces}
}
