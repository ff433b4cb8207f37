// Package uitest is what the tests of the tray process (ui/tray) and of the window process
// (ui/window) share: a relay over a temporary folder, the prepared figures both show (a
// snapshot, a usage ledger), and bounded waits. Only tests import it.
package uitest

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"fyne.io/fyne/v2"

	"github.com/codexrelay/codexrelay/app"
	"github.com/codexrelay/codexrelay/app/ledger"
	"github.com/codexrelay/codexrelay/app/relay"
	"github.com/codexrelay/codexrelay/proxy"
	"github.com/codexrelay/codexrelay/ui/source"
)

// Relay is a real app in a temporary config folder, with env on top of the tests' own
// variables. The Codex folder and the autostart folder are temporary too: no test writes to
// the real home, and nothing reaches chatgpt.com or auth.openai.com.
func Relay(t *testing.T, env map[string]string) *relay.Relay {
	t.Helper()
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
	r, err := relay.Open(app.Options{
		ConfigDir:    dir,
		Getenv:       func(k string) string { return vars[k] },
		AutostartDir: t.TempDir(),
		CallbackAddr: "127.0.0.1:0",
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// NeedKeyring skips tests that store secrets unless a private Secret Service runs (make test).
func NeedKeyring(t *testing.T) {
	if os.Getenv("CODEXRELAY_TEST_KEYRING") == "" {
		t.Skip("needs a Secret Service: run through `make test` (CODEXRELAY_TEST_KEYRING)")
	}
}

// QuietListen points relay's listen address at a loopback port nothing listens on, so that a
// redemption asked for in a test finds no running relay (none of the developer's).
func QuietListen(t *testing.T, relay *relay.Relay) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	if err := relay.Set(app.SettingListen, addr); err != nil {
		t.Fatal(err)
	}
}

// Receive waits for the next value on ch, failing the test if none comes within 10 s: no test
// waits without a bound, whatever the machine runs (a relay of the developer's own, a busy bus).
func Receive[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not come within 10 s", what)
		panic("unreachable")
	}
}

// MenuItem is the item of m labelled label; it fails the test when there is none.
func MenuItem(t *testing.T, m *fyne.Menu, label string) *fyne.MenuItem {
	t.Helper()
	for _, it := range m.Items {
		if it.Label == label {
			return it
		}
	}
	t.Fatalf("no menu item %q in %q", label, Labels(m.Items))
	return nil
}

// Labels are the labels of a menu's items ("" for a separator).
func Labels(items []*fyne.MenuItem) []string {
	var out []string
	for _, it := range items {
		out = append(out, it.Label)
	}
	return out
}

// Now is the clock time the prepared figures are read at.
var Now = time.Date(2026, 3, 12, 14, 32, 10, 0, time.Local)

// Sample is a snapshot with three accounts in three states and two recent requests:
// "personal" ready with its quota (served the last request, serves the next), "team" resting
// after its limit until 14:36, "api" whose key was rejected.
func Sample() *source.Fixed {
	cool := Now.Add(4*time.Minute + 32*time.Second)
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
			{ID: "t2", Time: Now.Add(-3 * time.Second), Model: "codex", ResolvedModel: "gpt-5.1-codex", Status: 200,
				Outcome: proxy.OutcomeCompleted, Attempts: []proxy.Attempt{{Account: "team", Status: 429}, {Account: "personal", Status: 200}},
				LatencyBreakdown: proxy.Latency{PreparationMs: 0.38, TotalMs: 4214}},
			{ID: "t1", Time: Now.Add(-40 * time.Second), Model: "gpt-5.1", Status: 503, Outcome: proxy.OutcomeError,
				Attempts:         []proxy.Attempt{{Account: "api", Status: 401}},
				LatencyBreakdown: proxy.Latency{PreparationMs: 2.5, TotalMs: 96}},
		},
	}
}

// Running is a listener serving on 127.0.0.1:7455.
func Running() app.ServiceStatus { return app.ServiceStatus{Addr: "127.0.0.1:7455", Running: true} }

// Credits are n banked resets, the next expiring at expires (none when zero), read at Now.
func Credits(n int, expires time.Time) *proxy.ResetCredits {
	c := &proxy.ResetCredits{Available: n, FetchedAt: Now}
	if !expires.IsZero() {
		c.NextExpiresAt = &expires
	}
	return c
}

// UsageRow is a prepared request daysAgo days before Now (a minute earlier, so that the rows
// of today are today in every time zone).
func UsageRow(daysAgo int, account, model, project string, in, cached, out int64, cost float64) source.UsageRow {
	return source.UsageRow{At: Now.Add(-time.Duration(daysAgo)*24*time.Hour - time.Minute), Account: account, Model: model,
		Project: project, Totals: ledger.Totals{Requests: 1, InputTokens: in, CachedTokens: cached, OutputTokens: out, CostUSD: cost}}
}

// SampleUsage is a week and a half of Sample's accounts: "personal" and "team" are ChatGPT
// seats, "api" an API key. Today: 840 k + 360 k tokens, $2.10 API-equivalent and $1.30 real.
func SampleUsage() *source.FixedUsage {
	return &source.FixedUsage{
		Rows: []source.UsageRow{
			UsageRow(0, "personal", "gpt-5.3-codex", "codexrelay", 800_000, 600_000, 40_000, 2.10),
			UsageRow(0, "api", "gpt-5.4-mini", "", 300_000, 100_000, 60_000, 1.30),
			UsageRow(1, "personal", "gpt-5.3-codex", "codexrelay", 2_000_000, 1_500_000, 100_000, 4.00),
			UsageRow(1, "team", "gpt-5.4", "webshop", 1_000_000, 500_000, 50_000, 3.00),
			UsageRow(3, "team", "gpt-5.3-codex", "webshop", 400_000, 200_000, 20_000, 1.00),
			UsageRow(10, "personal", "gpt-5.5", "codexrelay", 5_000_000, 4_000_000, 200_000, 20.00),
		},
		Burns: map[string]ledger.Burn{
			"personal": {PrimaryTokensPerPercent: 212_000, SecondaryTokensPerPercent: 1_840_000},
		},
		Pool: ledger.Forecast{TokensLastHour: 4_100_000, CapacityTokens: 5_000_000,
			RunsOut: Now.Add(time.Hour + 8*time.Minute), Known: []string{"personal"}, Unknown: []string{"team"}},
	}
}

// CountingUsage counts the Summary calls that reach a source.
type CountingUsage struct {
	source.UsageSource
	Summaries int
}

// Summary counts the call and asks the source.
func (c *CountingUsage) Summary(ctx context.Context, q ledger.Query) (ledger.Report, error) {
	c.Summaries++
	return c.UsageSource.Summary(ctx, q)
}

// Control is a listener (a source.RelayControl) that records what it was asked.
type Control struct {
	State           app.ServiceStatus
	Pauses, Resumes int
	Listen          string
	// ResumeErr is what Resume answers.
	ResumeErr error
}

// Status is the status it was given (paused after a Pause).
func (c *Control) Status() app.ServiceStatus { return c.State }

// Pause counts the pause and shows it in the status.
func (c *Control) Pause() { c.Pauses++; c.State.Paused, c.State.Running = true, false }

// Resume counts the resume and answers ResumeErr.
func (c *Control) Resume() error { c.Resumes++; return c.ResumeErr }

// SetListen records the address.
func (c *Control) SetListen(addr string) error { c.Listen = addr; return nil }

// JSON is v in JSON, to compare what went over the window API with what was sent.
func JSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
