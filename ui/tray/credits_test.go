package tray

import (
	"strings"
	"testing"
	"time"

	"github.com/codexrelay/codexrelay/app"
	"github.com/codexrelay/codexrelay/proxy"
	"github.com/codexrelay/codexrelay/ui/look"
	"github.com/codexrelay/codexrelay/ui/uitest"
)

// A credit that would expire unused within a day is told about once; one that expires later,
// or an account without credits, is not.
func TestACreditExpiringWithinADayIsToldOnce(t *testing.T) {
	n := newNotifier()
	p := newPool()
	p.s.Accounts[0].ResetCredits = uitest.Credits(2, uitest.Now.Add(30*time.Hour))
	p.s.Accounts[1].ResetCredits = uitest.Credits(0, time.Time{})
	if got := feed(n, p, uitest.Now); len(got) != 0 {
		t.Fatalf("baseline: %+v", got)
	}
	if got := feed(n, p, uitest.Now.Add(5*time.Hour)); len(got) != 0 {
		t.Fatalf("25 h before: %+v", got)
	}
	got := feed(n, p, uitest.Now.Add(7*time.Hour))
	if len(got) != 1 || got[0].kind != app.NotifyResetCredit || !strings.Contains(got[0].title, "a: a banked reset expires soon") ||
		!strings.Contains(got[0].body, "codexrelay accounts redeem a") {
		t.Fatalf("23 h before: %+v", got)
	}
	for _, at := range []time.Duration{8 * time.Hour, 20 * time.Hour} {
		if got := feed(n, p, uitest.Now.Add(at)); len(got) != 0 {
			t.Fatalf("told again at +%v: %+v", at, got)
		}
	}
}

// Every account rests and one holds a credit: the tray line shows it and the menu offers the
// redemption; choosing it asks the relay (here it has no such account, and says so).
func TestTrayOffersARedemptionWhenEveryAccountRests(t *testing.T) {
	tr, relay, _, _ := newTestTray(t, nil)
	uitest.QuietListen(t, relay)
	src := uitest.Sample()
	back := uitest.Now.Add(3 * time.Hour)
	src.Snapshot.Accounts[0].State, src.Snapshot.Accounts[0].CooldownReason, src.Snapshot.Accounts[0].CooldownUntil =
		proxy.StateCooldown, proxy.CooldownRateLimit, &back
	src.Snapshot.Accounts[1].ResetCredits = uitest.Credits(2, uitest.Now.Add(5*time.Hour))
	src.Snapshot.Accounts[0].ResetCredits = uitest.Credits(1, uitest.Now.Add(48*time.Hour))
	st := uitest.Running()
	tr.src, tr.fixed, tr.now = src, &st, func() time.Time { return uitest.Now }
	sentc := make(chan string, 4)
	tr.notes.send = func(title, body string) { sentc <- title + ": " + body }
	tr.refresh()
	var lines []string
	for _, it := range tr.Menu() {
		lines = append(lines, it.Label)
	}
	joined := strings.Join(lines, "\n")
	if !strings.Contains(joined, "team · limit until 14:36 · 2 banked resets, expires 19:32") {
		t.Fatalf("menu:\n%s", joined)
	}
	it := trayItem(t, tr, "Redeem a banked reset of team") // the one that expires first
	it.Action()
	if got := uitest.Receive(t, sentc, "the notification"); !strings.Contains(got, "team: the banked reset was not redeemed") {
		t.Fatalf("notification %q", got)
	}

	// With the policy off, or a pool that still serves, no offer.
	src.Snapshot.ResetCredits.Mode = proxy.ResetCreditsOff
	if redeemCandidate(src.Snapshot) != "" {
		t.Error("offered with the policy off")
	}
	src.Snapshot.ResetCredits.Mode = proxy.ResetCreditsAsk
	src.Snapshot.Accounts[0].State = proxy.StateReady
	if redeemCandidate(src.Snapshot) != "" {
		t.Error("offered while an account is ready")
	}
}

// The relay's credit events become notifications: its question (ask), a redemption, a failure.
// (The windows' half, the accounts window's detail and kind cell, is in resets_test.go.)
func TestCreditEventNotices(t *testing.T) {
	ask, ok := creditNotice(proxy.CreditEvent{Kind: proxy.CreditAsk, Account: "plus", BackAt: uitest.Now.Add(2 * time.Hour)}, uitest.Now)
	if !ok || !strings.Contains(ask.body, "Redeem a banked reset of plus") || !strings.Contains(ask.body, "16:32") {
		t.Fatalf("ask: %+v", ask)
	}
	res := proxy.RedeemResult{Account: "plus", WindowsReset: 2, Auto: true, Remaining: uitest.Credits(1, time.Time{})}
	done, _ := creditNotice(proxy.CreditEvent{Kind: proxy.CreditRedeemed, Account: "plus", Result: &res}, uitest.Now)
	if done.body != "Every account was resting: the relay redeemed a banked reset of plus: 2 windows reset; it serves again. 1 banked reset left." {
		t.Fatalf("redeemed: %q", done.body)
	}
	if _, ok := creditNotice(proxy.CreditEvent{Kind: "other"}, uitest.Now); ok {
		t.Fatal("an unknown kind told")
	}
	if got := creditsShort(nil, uitest.Now); got != "" { // the kind cell leaves it out
		t.Errorf("no credits: %q", got)
	}
}

// The relay's ask is a notification with the action itself: choosing it redeems a credit of
// the account the relay named.
func TestTheAskNotificationCarriesTheRedemption(t *testing.T) {
	tr, _, _, _ := newTestTray(t, nil)
	type shown struct {
		title, label string
		act          func()
	}
	got := make(chan shown, 1)
	tr.actNotify = func(title, _, label string, act func()) { got <- shown{title, label, act} }
	notes := make(chan string, 1)
	tr.notes.send = func(title, _ string) { notes <- title }
	tr.creditEvent(proxy.CreditEvent{Kind: proxy.CreditAsk, Account: "team", BackAt: uitest.Now.Add(time.Hour)})
	s := uitest.Receive(t, got, "the notification with its action")
	if s.title != "A banked reset would serve now" || s.label != "Redeem a banked reset of team" {
		t.Fatalf("notified %q with the action %q", s.title, s.label)
	}
	s.act() // the test relay has no account "team": the redemption says why it did not happen
	if n := uitest.Receive(t, notes, "the notification after the action"); n != "team: the banked reset was not redeemed" {
		t.Fatalf("after the action: %q", n)
	}
}

// One term for what a user reads: "banked reset", never "reset credit" or "credit" alone, in
// the notifications, the menus and the failures (issue 32 Low: the three were used in turn).
// (The windows' half is in resets_test.go.)
func TestBankedResetIsTheOneTerm(t *testing.T) {
	exp := uitest.Now.Add(3 * time.Hour)
	res := proxy.RedeemResult{Account: "plus", WindowsReset: 1, Remaining: uitest.Credits(1, time.Time{})}
	a := proxy.AccountStats{Name: "plus", Kind: proxy.KindChatGPT, State: proxy.StateReady, ResetCredits: uitest.Credits(2, exp)}
	var said []string
	for _, e := range []proxy.CreditEvent{{Kind: proxy.CreditAsk, Account: "plus"}, {Kind: proxy.CreditRedeemed, Account: "plus", Result: &res},
		{Kind: proxy.CreditRedeemFailed, Account: "plus", Error: "x"}} {
		n, _ := creditNotice(e, uitest.Now)
		said = append(said, n.title, n.body)
	}
	n := creditExpiringNotice(a, exp, uitest.Now)
	said = append(said, n.title, n.body, creditsShort(a.ResetCredits, uitest.Now),
		look.RedeemFailure("plus", proxy.ErrNoResetCredit), look.RedeemFailure("plus", proxy.ErrRedeemPending),
		redeemedNotice(res).title)
	for _, s := range said {
		if strings.Contains(strings.ToLower(s), "credit") {
			t.Errorf("%q says credit", s)
		}
	}
}
