package window

import (
	"strings"
	"testing"
	"time"

	"github.com/codexrelay/codexrelay/app"
	"github.com/codexrelay/codexrelay/proxy"
	"github.com/codexrelay/codexrelay/ui/uitest"
)

// The accounts window's detail and the kind cell of the relay's credit events (the tray's
// half, the notifications, is in credits_test.go).
func TestCreditEventNotices(t *testing.T) {
	if got := creditsDetail(uitest.Credits(3, uitest.Now.Add(26*time.Hour)), uitest.Now); got != "3 banked resets (the next expires Fri 16:32)" {
		t.Errorf("detail %q", got)
	}
	if got := joinNonEmpty(", ", kindText(proxy.KindChatGPT), ""); got != "ChatGPT" { // no credits: creditsShort says ""
		t.Errorf("kind cell %q", got)
	}
}

// One term for what a user reads: "banked reset", never "reset credit" or "credit" alone, in
// the accounts window and the dashboard (the tray's half is in credits_test.go).
func TestBankedResetIsTheOneTerm(t *testing.T) {
	exp := uitest.Now.Add(3 * time.Hour)
	a := proxy.AccountStats{Name: "plus", Kind: proxy.KindChatGPT, State: proxy.StateReady, ResetCredits: uitest.Credits(2, exp)}
	for _, s := range []string{creditsDetail(a.ResetCredits, uitest.Now), creditsCell(a, uitest.Now).text} {
		if strings.Contains(strings.ToLower(s), "credit") {
			t.Errorf("%q says credit", s)
		}
	}
}

// The accounts window shows an account's credits and offers Redeem in its menu.
func TestAccountsWindowShowsCreditsAndRedeems(t *testing.T) {
	uitest.NeedKeyring(t)
	u, relay := newTestUI(t, nil)
	if _, err := relay.AddAccount(app.NewAccount{Name: "me", Kind: "chatgpt", Email: "me@example.com"},
		app.Secret{AccessToken: "at", RefreshToken: "rt", AccountID: "acct"}); err != nil {
		t.Fatal(err)
	}
	uitest.QuietListen(t, relay)
	u.showAccounts()
	a := u.accounts
	if got := uitest.Labels(a.rowMenu(0).Items); strings.Contains(strings.Join(got, "|"), "Redeem") {
		t.Fatalf("offered without credits: %q", got)
	}
	u.now = func() time.Time { return uitest.Now }
	a.show(view{snap: proxy.Snapshot{Accounts: []proxy.AccountStats{{Name: "me", Kind: proxy.KindChatGPT, State: proxy.StateReady,
		ResetCredits: uitest.Credits(2, uitest.Now.Add(3*time.Hour))}}}})
	mustShow(t, a.win.Content(), "ChatGPT · me@example.com · 2 banked resets (the next expires 17:32)")
	menuAction(t, a, 0, "Redeem a banked reset")
	// The fake base URL answers nothing: the failure is shown, and nothing else happened.
	if got := overlayTexts(t, a.win); !strings.Contains(got, "anked resets: upstream unreachable") {
		t.Errorf("no failure shown: %q", got)
	}
}
