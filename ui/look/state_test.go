package look_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/codexrelay/codexrelay/app"
	"github.com/codexrelay/codexrelay/proxy"
	"github.com/codexrelay/codexrelay/ui/look"
	"github.com/codexrelay/codexrelay/ui/uitest"
)

// The dashboard's header (and the tray's tooltip) says each thing once.
func TestDashboardHeaderSaysEachThingOnce(t *testing.T) {
	for _, c := range []struct {
		name       string
		svc        app.ServiceStatus
		word, line string
	}{
		{"paused", app.ServiceStatus{Addr: "127.0.0.1:7455", Paused: true}, "Paused", "requests are refused until you resume"},
		{"port taken", app.ServiceStatus{Addr: "127.0.0.1:7455", Err: errors.New("cannot listen on 127.0.0.1:7455: the port is taken")},
			"Stopped", "cannot listen on 127.0.0.1:7455: the port is taken"},
		{"not started", app.ServiceStatus{}, "Stopped", "the relay has not started"},
		{"no account", uitest.Running(), "Not serving", "Listening on http://127.0.0.1:7455/v1 · no account yet"},
	} {
		snap := uitest.Sample().Snapshot
		if c.name == "no account" {
			snap.Accounts = nil
		}
		_, word, line := look.Header(snap, c.svc)
		if word != c.word || line != c.line {
			t.Errorf("%s: %q · %q, want %q · %q", c.name, word, line, c.word, c.line)
		}
		if strings.Contains(strings.ToLower(line), strings.ToLower(word)) {
			t.Errorf("%s: the line %q repeats %q", c.name, line, word)
		}
	}
}

// NextChange is the soonest time what the tray and the windows show changes by the clock
// alone: a rest's end, a usage window's reset, a banked reset's week, day and expiry.
func TestNextChange(t *testing.T) {
	now := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { t := now.Add(d); return &t }
	if d := look.NextChange(proxy.Snapshot{Accounts: []proxy.AccountStats{{Name: "idle", State: proxy.StateReady}}}, now); d != 0 {
		t.Fatalf("nothing changes with the clock, but NextChange is %v", d)
	}
	snap := proxy.Snapshot{Accounts: []proxy.AccountStats{
		{Name: "a", State: proxy.StateCooldown, CooldownUntil: at(40 * time.Minute),
			Quota: &proxy.Quota{PrimaryResetsAt: now.Add(2 * time.Hour), SecondaryResetsAt: now.Add(-time.Hour)}},
		{Name: "b", ResetCredits: &proxy.ResetCredits{Available: 1, NextExpiresAt: at(24*time.Hour + 25*time.Minute)}},
	}}
	if d := look.NextChange(snap, now); d != 25*time.Minute {
		t.Fatalf("NextChange %v, want 25m (b's banked reset comes within a day of its expiry)", d)
	}
	snap.Accounts[1].ResetCredits = nil
	if d := look.NextChange(snap, now); d != 40*time.Minute {
		t.Fatalf("NextChange %v, want 40m (a's rest ends; a reset in the past is no time)", d)
	}
}

// The relay's state has one tone, wherever it is drawn.
func TestStateTone(t *testing.T) {
	for s, want := range map[look.State]look.Tone{look.Serving: look.Good, look.Degraded: look.Warn, look.Paused: look.Dim, look.Stopped: look.Bad} {
		if got := s.Tone(); got != want {
			t.Errorf("%v: tone %v, want %v", s, got, want)
		}
	}
}

// An account's usage in a few words names the windows it has: a weekly-only plan has no five
// hours to show.
func TestUsageShortLeavesOutAnAbsentWindow(t *testing.T) {
	for _, c := range []struct {
		q    *proxy.Quota
		want string
	}{
		{&proxy.Quota{PrimaryUsedPercent: 37, SecondaryUsedPercent: 62, PrimaryWindowSeconds: 18000, SecondaryWindowSeconds: 604800}, "5 h 37% · week 62%"},
		{&proxy.Quota{SecondaryUsedPercent: 62, SecondaryWindowSeconds: 604800}, "week 62%"},
		{&proxy.Quota{PrimaryUsedPercent: 37, SecondaryUsedPercent: 62}, "5 h 37% · week 62%"}, // an older reading: both
		{nil, ""},
	} {
		if got := look.UsageShort(c.q); got != c.want {
			t.Errorf("UsageShort(%+v) = %q, want %q", c.q, got, c.want)
		}
	}
}

// A dry pool's header says when it is back: the earliest rest that ends, with its account;
// nothing while an account is ready, or when no rest ends (sign-ins, disabled).
func TestBackAtSaysWhenADryPoolServesAgain(t *testing.T) {
	now := uitest.Now
	at := func(d time.Duration) *time.Time { t := now.Add(d); return &t }
	snap := proxy.Snapshot{Accounts: []proxy.AccountStats{
		{Name: "team", State: proxy.StateCooldown, CooldownUntil: at(40 * time.Minute)},
		{Name: "pro", State: proxy.StateCooldown, CooldownUntil: at(12 * time.Minute)},
		{Name: "lab", State: proxy.StateNeedsLogin},
	}}
	want := "the first account is back at " + look.Clock(now.Add(12*time.Minute), now) + " (pro)"
	if got := look.BackAt(snap, now); got != want {
		t.Errorf("BackAt = %q, want %q", got, want)
	}
	snap.Accounts[0].State = proxy.StateReady
	if got := look.BackAt(snap, now); got != "" {
		t.Errorf("with an account ready: %q", got)
	}
	if got := look.BackAt(proxy.Snapshot{Accounts: snap.Accounts[2:]}, now); got != "" {
		t.Errorf("with no rest that ends: %q", got)
	}
}
