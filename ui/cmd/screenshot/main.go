// Command screenshot shows a window of the real UI with prepared figures, for the README's
// screenshots (`make screenshot` runs it under Xvfb, in the light and the dark theme, and
// captures the window). It never starts a proxy and never touches the real keychain or
// settings: the windows read a fixed snapshot through source.Fixed, the accounts live in a
// temporary folder and their secrets in go-keyring's in-memory mock.
package main

import (
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	fyneapp "fyne.io/fyne/v2/app"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/widget"
	"github.com/zalando/go-keyring"

	"github.com/codexrelay/codexrelay/app"
	"github.com/codexrelay/codexrelay/app/ledger"
	"github.com/codexrelay/codexrelay/app/relay"
	"github.com/codexrelay/codexrelay/proxy"
	"github.com/codexrelay/codexrelay/ui/source"
	"github.com/codexrelay/codexrelay/ui/window"
)

// options are the flags: what to show, with what, at which size, for how long.
type options struct {
	wait        time.Duration
	window      string
	size        string
	diagnostics bool
	period      int
	usage       string
}

func main() {
	opt := parseFlags()
	now := time.Date(2026, 3, 12, 14, 32, 10, 0, time.Local)
	fa := fyneapp.NewWithID("io.github.codexrelay.screenshot")
	if opt.wait > 0 {
		go func() {
			time.Sleep(opt.wait)
			fyne.Do(fa.Quit)
		}()
	}
	switch opt.window {
	case "bare", "bare-tray":
		bare(fa, opt.window == "bare")
		return
	case "bare-window":
		w := fa.NewWindow("Bare Fyne window")
		w.SetContent(widget.NewLabel("A bare Fyne window"))
		w.Show()
		fa.Run()
		return
	}
	dir, err := os.MkdirTemp("", "codexrelay-shot-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	relay := openRelay(dir)
	u := window.NewWithRelay(fa, relay, slog.New(slog.DiscardHandler))
	show(u, relay, opt, dir, now)
	if opt.size != "" {
		resize(fa, opt.size)
	}
	fa.Run()
}

func parseFlags() options {
	var opt options
	flag.DurationVar(&opt.wait, "for", 0, "quit after this long (0 = stay until the window closes)")
	flag.StringVar(&opt.window, "window", "dashboard", "what to show: dashboard, first-run, first-run-empty, first-run-key, accounts, settings, settings-codex or usage; "+
		"bare or bare-tray: a bare Fyne app (a label, a tray menu), the floor `make idle` compares with; "+
		"bare-window: a label in a window and nothing else, the floor of a window's start")
	flag.StringVar(&opt.size, "size", "", "the window's size, WxH (default: the window's own)")
	flag.BoolVar(&opt.diagnostics, "diagnostics", false, "open the dashboard's Diagnostics section")
	flag.IntVar(&opt.period, "period", 30, "the Usage window's period in days: 7 or 30")
	flag.StringVar(&opt.usage, "usage", "two-weeks", "what the Usage window's ledger holds: two-weeks, empty, off or failed")
	flag.Parse()
	return opt
}

// openRelay opens an app whose settings, home and Codex folder are in dir, with its secrets in
// go-keyring's in-memory mock and every network address one nothing listens on.
func openRelay(dir string) *relay.Relay {
	keyring.MockInit() // secrets in memory only
	// A throw-away home, so that the paths on screen read ~/.codex/… as they would for you.
	os.Setenv("HOME", dir)
	codexHome := filepath.Join(dir, ".codex")
	if err := os.MkdirAll(codexHome, 0o700); err != nil {
		log.Fatal(err)
	}
	env := map[string]string{
		"CODEX_HOME":        codexHome,
		"CODEXRELAY_LISTEN": "127.0.0.1:7455",
		// Nothing listens there: an account's quota is never fetched from the network.
		"CODEXRELAY_CHATGPT_BASE_URL": "http://127.0.0.1:9/backend-api/codex",
		"CODEXRELAY_AUTH_ISSUER":      "http://127.0.0.1:9",
	}
	r, err := relay.Open(app.Options{ConfigDir: filepath.Join(dir, "config"), Getenv: func(k string) string { return env[k] },
		AutostartDir: filepath.Join(dir, "autostart"), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		log.Fatal(err)
	}
	return r
}

// show opens opt.window over its fixture, read at now (dir is openRelay's).
func show(u *window.UI, relay *relay.Relay, opt options, dir string, now time.Time) {
	running := app.ServiceStatus{Addr: "127.0.0.1:7455", Running: true}
	codexHome := filepath.Join(dir, ".codex")
	switch opt.window {
	case "dashboard":
		// Codex points at the relay.
		if _, err := relay.WriteCodexConfig(""); err != nil {
			log.Fatal(err)
		}
		u.ShowFixed(dashboardFixture(now), running, now)
		u.ShowDashboard()
		if opt.diagnostics {
			go func() { // once the window has its size
				time.Sleep(time.Second)
				fyne.Do(u.ShowDiagnostics)
			}()
		}
	case "first-run":
		// The Codex CLI is signed in, and its config does not name the relay yet.
		writeFile(filepath.Join(codexHome, "auth.json"), `{"tokens":{"id_token":"`+idToken("dev@example.com")+
			`","access_token":"`+idToken("")+`","refresh_token":"rt","account_id":"acct-1"}}`)
		writeFile(filepath.Join(codexHome, "config.toml"), "model = \"gpt-5.1-codex\"\n")
		u.ShowFixed(source.Fixed{Snapshot: proxy.Snapshot{Listen: "127.0.0.1:7455", Accounts: []proxy.AccountStats{}}}, running, now)
		u.ShowDashboard()
	case "accounts":
		snap := accountsFixture(now)
		for _, a := range snap.Accounts {
			addAccount(relay, a)
		}
		u.ShowFixed(source.Fixed{Snapshot: snap}, running, now)
		u.ShowAccounts()
	case "usage":
		u.ShowFixed(dashboardFixture(now), running, now)
		u.ShowFixedUsage(usageFor(opt.usage, dir, now))
		u.ShowUsagePeriod(opt.period)
	case "first-run-empty":
		// A new user's first screen: no account, no Codex login to take, Codex on its own
		// provider.
		writeFile(filepath.Join(codexHome, "config.toml"), "model = \"gpt-5.1-codex\"\n")
		u.ShowFixed(source.Fixed{Snapshot: proxy.Snapshot{Listen: "127.0.0.1:7455", Accounts: []proxy.AccountStats{}}}, running, now)
		u.ShowDashboard()
	case "first-run-key":
		// No Codex login: an API key was added from the card, and Codex does not use the relay
		// yet; the card stays to point Codex at it.
		u.ShowFixed(source.Fixed{Snapshot: proxy.Snapshot{Listen: "127.0.0.1:7455", Accounts: []proxy.AccountStats{}}}, running, now)
		u.ShowDashboard()
		u.ShowFixed(source.Fixed{Snapshot: proxy.Snapshot{Listen: "127.0.0.1:7455", Accounts: []proxy.AccountStats{
			{Name: "work", Kind: proxy.KindOpenAI, API: proxy.APIResponses, State: proxy.StateReady}}}}, running, now)
	case "settings":
		u.ShowFixed(source.Fixed{Snapshot: proxy.Snapshot{Listen: "127.0.0.1:7455"}}, running, now)
		u.ShowSettings()
	case "settings-codex":
		// Codex points at the relay: the Codex section's button undoes it.
		if _, err := relay.WriteCodexConfig(""); err != nil {
			log.Fatal(err)
		}
		u.ShowFixed(source.Fixed{Snapshot: proxy.Snapshot{Listen: "127.0.0.1:7455"}}, running, now)
		u.ShowSettingsCodex()
	default:
		log.Fatalf("unknown window %q", opt.window)
	}
}

// usageFor is the ledger -usage names: two weeks of the dashboard's accounts, nothing, off,
// or one that failed to open (dir is openRelay's).
func usageFor(which, dir string, now time.Time) *source.FixedUsage {
	switch which {
	case "two-weeks":
		return usageFixture(now)
	case "empty":
		return &source.FixedUsage{}
	case "off":
		return &source.FixedUsage{Off: true}
	case "failed":
		return &source.FixedUsage{Err: fmt.Errorf("the usage ledger %s cannot be opened: database is locked; the relay serves without it",
			filepath.Join(dir, ".local/share/codexrelay/usage.db"))}
	}
	log.Fatalf("unknown -usage %q", which)
	return nil
}

// resize gives every window the size WxH.
func resize(fa fyne.App, size string) {
	w, h, ok := strings.Cut(size, "x")
	wf, err1 := strconv.ParseFloat(w, 32)
	hf, err2 := strconv.ParseFloat(h, 32)
	if !ok || err1 != nil || err2 != nil {
		log.Fatalf("bad -size %q: use WxH", size)
	}
	for _, win := range fa.Driver().AllWindows() {
		win.Resize(fyne.NewSize(float32(wf), float32(hf)))
	}
}

// bare runs a Fyne app that does nothing: a tray menu and a window with a label, shown or
// not. What it costs at idle is Fyne's own (its driver polls for events 60 times a second).
func bare(fa fyne.App, window bool) {
	if d, ok := fa.(desktop.App); ok {
		d.SetSystemTrayMenu(fyne.NewMenu("Bare", fyne.NewMenuItem("Nothing", nil)))
	}
	w := fa.NewWindow("Bare Fyne")
	w.SetContent(widget.NewLabel("A bare Fyne app"))
	if window {
		w.Show()
	}
	fa.Run()
}

func writeFile(path, content string) {
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		log.Fatal(err)
	}
}

// idToken is an unsigned JWT naming email (an access token when email is "").
func idToken(email string) string {
	enc := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	claims := map[string]any{"exp": time.Now().Add(24 * time.Hour).Unix()}
	if email != "" {
		claims["email"] = email
		claims["https://api.openai.com/auth"] = map[string]any{"chatgpt_account_id": "acct-1"}
	}
	return enc(map[string]string{"alg": "none"}) + "." + enc(claims) + ".sig"
}

// addAccount stores an account like a in the app (its secret in the in-memory keychain).
func addAccount(relay *relay.Relay, a proxy.AccountStats) {
	na := app.NewAccount{Name: a.Name, Kind: string(a.Kind)}
	sec := app.Secret{APIKey: "sk-shot-" + a.Name}
	switch a.Kind {
	case proxy.KindChatGPT:
		na.Email = a.Name + "@example.com"
		if strings.Contains(a.Name, "@") {
			na.Email = a.Name
		}
		sec = app.Secret{AccessToken: idToken(""), RefreshToken: "rt-" + a.Name, AccountID: "acct-" + a.Name}
	default:
		na.BaseURL = "https://api.openai.com/v1"
		if a.API == proxy.APIChat {
			na.BaseURL, na.API = "http://127.0.0.1:8080/v1", string(proxy.APIChat)
		}
	}
	if _, err := relay.AddAccount(na, sec); err != nil {
		log.Fatal(fmt.Errorf("adding %s: %w", a.Name, err))
	}
	if a.State == proxy.StateDisabled {
		if err := relay.SetAccountEnabled(a.Name, false); err != nil {
			log.Fatal(err)
		}
	}
}

// dashboardFixture is a busy afternoon: three accounts (one ready with its quota, one resting
// after its limit, one whose key was rejected), a warm catalog and eight recent requests.
func dashboardFixture(now time.Time) source.Fixed {
	at := func(d time.Duration) time.Time { return now.Add(d) }
	cool := at(4*time.Minute + 32*time.Second)
	expires := at(3*24*time.Hour + 20*time.Hour) // team's first banked reset
	snap := proxy.Snapshot{
		Listen:     "127.0.0.1:7455",
		UptimeMs:   (3*time.Hour + 12*time.Minute).Milliseconds(),
		LastServed: "personal", Next: "personal",
		Catalog: proxy.CatalogStats{
			AgeMs: 252_000, Models: 14, SWREnabled: true,
			StaleMaxAgeMs: 1_800_000, TTLMs: 600_000,
			Refresh:   proxy.RefreshCounts{Background: 17, Blocking: 1, Shared: 6},
			Refreshes: 19,
		},
		Serialization: proxy.Serialization{Hits: 1912, Misses: 1246, Direct: 58},
		Requests: proxy.RequestStats{
			Total: 1284, Errors: 7, Rotations: 23, InFlight: 2, WebSockets: 1, MedianPreparationMs: 0.41,
		},
		Accounts: []proxy.AccountStats{
			{
				Name: "personal", Kind: proxy.KindChatGPT, API: proxy.APIResponses, State: proxy.StateReady,
				Requests: 912, ResetCredits: &proxy.ResetCredits{}, Reserve: 20,
				BucketRests: []proxy.BucketRest{{Bucket: "codex_bengalfox", Name: "GPT-5.3-Codex-Spark", Until: at(40 * time.Minute)}},
				Quota: &proxy.Quota{
					PrimaryUsedPercent: 37, PrimaryResetsAt: at(2*time.Hour + 48*time.Minute),
					SecondaryUsedPercent: 62, SecondaryResetsAt: at(3*24*time.Hour + 5*time.Hour),
					FetchedAt: at(-40 * time.Second),
				},
			},
			{
				Name: "team", Kind: proxy.KindChatGPT, API: proxy.APIResponses, State: proxy.StateCooldown,
				CooldownUntil: &cool, CooldownReason: proxy.CooldownRateLimit, Requests: 341, Failures: 4,
				LastError:    "429 usage_limit_reached: the 5-hour limit resets at 14:36",
				ResetCredits: &proxy.ResetCredits{Available: 2, NextExpiresAt: &expires},
				Quota: &proxy.Quota{
					PrimaryUsedPercent: 100, PrimaryResetsAt: cool,
					SecondaryUsedPercent: 81, SecondaryResetsAt: at(5*24*time.Hour + 2*time.Hour),
					FetchedAt: at(-2 * time.Minute),
				},
			},
			{
				Name: "openai-api", Kind: proxy.KindOpenAI, API: proxy.APIResponses, State: proxy.StateNeedsLogin,
				Requests: 31, Failures: 3,
				LastError: "401 invalid_api_key: the key was revoked",
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
		{3 * time.Second, "gpt-5.1-codex", "", []proxy.Attempt{ok("personal", 4210)}, 200, proxy.OutcomeCompleted, 0.38, 4214},
		{19 * time.Second, "codex", "gpt-5.1-codex", []proxy.Attempt{ok("personal", 2875)}, 200, proxy.OutcomeCompleted, 0.44, 2879},
		// team reached its limit mid-conversation: personal re-made the compaction team had sealed.
		{47 * time.Second, "gpt-5.1-codex", "", []proxy.Attempt{limited, ok("personal", 6120)}, 200, proxy.OutcomeCompleted, 0.41, 6338},
		{68 * time.Second, "gpt-5.1-codex-mini", "", []proxy.Attempt{limited, ok("personal", 1432)}, 200, proxy.OutcomeCompleted, 0.36, 1651},
		{2*time.Minute + 5*time.Second, "gpt-5.1-codex", "", []proxy.Attempt{{Account: "openai-api", Status: 401, Ms: 95}, limited, ok("personal", 3904)}, 200, proxy.OutcomeCompleted, 0.47, 4215},
		{3*time.Minute + 40*time.Second, "gpt-5.1", "", []proxy.Attempt{ok("team", 980)}, 200, proxy.OutcomeCompleted, 0.29, 985},
		{4*time.Minute + 12*time.Second, "gpt-5.1-codex", "", []proxy.Attempt{ok("team", 12840)}, 200, proxy.OutcomeCanceled, 0.52, 9120},
		{6*time.Minute + 58*time.Second, "codex", "gpt-5.1-codex", []proxy.Attempt{ok("team", 5310)}, 200, proxy.OutcomeCompleted, 1.9, 5322},
	}
	traces := make([]proxy.Trace, len(rows))
	for i, r := range rows {
		traces[i] = proxy.Trace{
			ID: strconv.Itoa(i), Time: at(-r.ago), Route: "/v1/responses", Model: r.model, ResolvedModel: r.resolve,
			Stream: true, Status: r.status, Outcome: r.outcome, Attempts: r.attempts,
			LatencyBreakdown: proxy.Latency{PreparationMs: r.prep, TotalMs: r.total},
		}
	}
	traces[2].CompactionRemade = 1
	// Codex's own background calls to ChatGPT, which fold into one line under the requests.
	for i, call := range []struct {
		ago  time.Duration
		path string
	}{{10 * time.Second, "wham/usage"}, {70 * time.Second, "wham/usage"}, {130 * time.Second, "wham/usage"},
		{190 * time.Second, "wham/usage"}, {250 * time.Second, "ps/plugins/installed"}, {251 * time.Second, "ps/mcp"},
		{252 * time.Second, "ps/plugins/installed"}} {
		traces = append(traces, proxy.Trace{ID: "call" + strconv.Itoa(i), Time: at(-call.ago), Route: proxy.RouteChatGPT,
			Path: call.path, Account: "personal", Status: 200, Outcome: proxy.OutcomeCompleted,
			LatencyBreakdown: proxy.Latency{TotalMs: 180}})
	}
	return source.Fixed{Snapshot: snap, Recent: traces}
}

// accountsFixture is seven accounts in every state, for the accounts window.
func accountsFixture(now time.Time) proxy.Snapshot {
	at := func(d time.Duration) *time.Time { t := now.Add(d); return &t }
	quota := func(five, week float64, fiveIn, weekIn time.Duration) *proxy.Quota {
		return &proxy.Quota{PrimaryUsedPercent: five, PrimaryResetsAt: now.Add(fiveIn),
			SecondaryUsedPercent: week, SecondaryResetsAt: now.Add(weekIn), FetchedAt: now}
	}
	return proxy.Snapshot{
		Listen: "127.0.0.1:7455", LastServed: "dev@example.com", Next: "team",
		Accounts: []proxy.AccountStats{
			{Name: "dev@example.com", Kind: proxy.KindChatGPT, State: proxy.StateReady, Quota: quota(91, 64, 2*time.Hour, 70*time.Hour)},
			{Name: "team", Kind: proxy.KindChatGPT, State: proxy.StateReady, Reserve: 20, Quota: quota(12, 33, 4*time.Hour, 100*time.Hour)},
			{Name: "pro", Kind: proxy.KindChatGPT, State: proxy.StateCooldown, CooldownReason: proxy.CooldownRateLimit,
				CooldownUntil: at(4 * time.Minute), LastError: "429 usage_limit_reached", Quota: quota(100, 71, 4*time.Minute, 30*time.Hour),
				ResetCredits: &proxy.ResetCredits{Available: 1, NextExpiresAt: at(20 * time.Hour)}},
			{Name: "lab", Kind: proxy.KindChatGPT, State: proxy.StateNeedsLogin, LastError: "401 token_expired: sign in again"},
			{Name: "work", Kind: proxy.KindOpenAI, State: proxy.StateReady},
			{Name: "local", Kind: proxy.KindOpenAI, API: proxy.APIChat, State: proxy.StateCooldown, CooldownReason: proxy.CooldownFailing,
				CooldownUntil: at(30 * time.Second), LastError: "connection refused"},
			{Name: "old-key", Kind: proxy.KindOpenAI, State: proxy.StateDisabled},
		},
	}
}

// usageFixture is two weeks of the dashboard's three accounts: two ChatGPT seats that carry
// most of the work on weekdays and an API key for a nightly job, over five models and four
// projects, with burn rates for the seats and a forecast for the afternoon.
func usageFixture(now time.Time) *source.FixedUsage {
	type mix struct {
		account, model, project string
		tokens                  float64 // a weekday's input tokens, in millions
		cached, output          float64 // shares of the input
	}
	mixes := []mix{
		{"personal", "gpt-5.3-codex", "codexrelay", 14, 0.88, 0.02},
		{"personal", "gpt-5.4", "codexrelay", 3.2, 0.80, 0.03},
		{"personal", "gpt-5.4-mini", "dotfiles", 1.1, 0.70, 0.04},
		{"team", "gpt-5.3-codex", "checkout-service", 9.5, 0.84, 0.025},
		{"team", "gpt-5.5", "checkout-service", 1.8, 0.76, 0.03},
		{"team", "gpt-5.1-codex-mini", "infra", 2.4, 0.65, 0.05},
		{"openai-api", "gpt-5.4-mini", "nightly-review", 2.6, 0.55, 0.06},
		{"openai-api", "gpt-5.1-codex-mini", "", 0.9, 0.40, 0.05},
	}
	var rows []source.UsageRow
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	for d := 13; d >= 0; d-- {
		day := today.AddDate(0, 0, -d)
		weekend := day.Weekday() == time.Saturday || day.Weekday() == time.Sunday
		for i, m := range mixes {
			// A steady wobble from day to day and mix to mix, no randomness: the same picture
			// every time.
			f := 0.75 + 0.45*math.Abs(math.Sin(float64(d*7+i*3)))
			if weekend && m.account != "openai-api" {
				f *= 0.2
			}
			if d == 0 {
				f *= 0.6 // today is not over
			}
			in := int64(m.tokens * f * 1e6)
			cached, out := int64(float64(in)*m.cached), int64(float64(in)*m.output)
			p, _ := ledger.LookupPrice(m.model, nil)
			rows = append(rows, source.UsageRow{
				At: day.Add(time.Duration(9+i) * time.Hour), Account: m.account, Model: m.model, Project: m.project,
				Totals: ledger.Totals{Requests: in / 60_000, Errors: in / 4_000_000, InputTokens: in, CachedTokens: cached,
					OutputTokens: out, ReasoningTokens: out / 2, CostUSD: p.Cost(in, cached, out)},
			})
		}
	}
	return &source.FixedUsage{
		Rows: rows,
		Burns: map[string]ledger.Burn{
			"personal": {PrimaryTokensPerPercent: 212_000, SecondaryTokensPerPercent: 1_840_000, PrimaryPercentSeen: 64, SecondaryPercentSeen: 38},
			"team":     {PrimaryTokensPerPercent: 168_000, PrimaryPercentSeen: 41},
		},
		Pool: ledger.Forecast{TokensLastHour: 4_100_000, CapacityTokens: 7_900_000,
			RunsOut: now.Add(time.Hour + 56*time.Minute), Known: []string{"personal", "team"}},
	}
}
