package app

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/codexrelay/codexrelay/proxy"
)

// The store alone (the window process's, the command line's): it changes the settings and the
// accounts, which the running relay follows, shows every setting, and what only a relay does
// travels to the running one; with none running, it says so and makes none (app/relay's
// RedeemCredit redeems then, through a relay that never listens). Nothing follows a store that
// no relay was made over.
func TestTheStoreAloneChangesWhatTheRelayFollows(t *testing.T) {
	opt := testOptions(t, testKeychain(t))
	relay, svc := runningRelay(t, opt)
	w, err := Open(opt)
	if err != nil {
		t.Fatal(err)
	}
	if followers(w) != 0 {
		t.Fatal("Open made a relay")
	}
	for _, change := range []func() error{
		func() error { return w.Set(SettingStrategy, proxy.StrategyRoundRobin) },
		func() error { return w.Set(SettingSWR, "false") },
		func() error { return w.Set(SettingStaleMaxAge, "2400000") },
		func() error { return w.Set(SettingTTL, "1200000") },
		func() error { return w.Set(TimeoutHeader.Setting(), "30000") },
		func() error { return w.Set(SettingHold, "5") },
		func() error { return w.Set(SettingResetCredits, proxy.ResetCreditsOff) },
		func() error { return w.SetAlias("fast", []string{"gpt-5"}) },
		func() error { _, err := w.SetLocalKey(true); return err },
		func() error {
			_, err := w.AddAccount(NewAccount{Name: "work", Kind: "openai", BaseURL: "http://127.0.0.1:9/v1"}, Secret{APIKey: "sk-test-window"})
			return err
		},
	} {
		if err := change(); err != nil {
			t.Fatal(err)
		}
	}
	for _, st := range SettingsTable {
		st.Show(w) // reads no proxy
	}
	if got := w.catalogStats(); got.SWREnabled || got.TTLMs != (20*time.Minute).Milliseconds() {
		t.Errorf("the catalog timing a relay would take: %+v", got)
	}
	if w.signInClient() == nil {
		t.Fatal("no sign-in client")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		snap := relay.Proxy.Stats()
		if len(snap.Accounts) == 1 && snap.Accounts[0].Name == "work" && !snap.Catalog.SWREnabled && relay.Proxy.LocalKeyRequired() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the running relay did not follow the window's changes: %+v", snap)
		}
		time.Sleep(10 * time.Millisecond)
	}

	// A redemption travels to the running relay (an API key holds no banked reset); with none
	// running, the store says so, having sent nothing and made no relay.
	if _, err := w.RedeemCredit("work"); !errors.Is(err, proxy.ErrNotChatGPT) || followers(w) != 0 {
		t.Fatalf("redeem through the running relay: %v (a relay made here: %v)", err, followers(w) != 0)
	}
	svc.Stop()
	if _, err := w.RedeemCredit("work"); !errors.Is(err, ErrNoRelay) || followers(w) != 0 {
		t.Fatalf("redeem with no relay running: %v (a relay made here: %v)", err, followers(w) != 0)
	}
	if got := w.Accounts(); len(got) != 1 || got[0].Name != "work" {
		t.Errorf("accounts %+v", got)
	}
}

// followers counts what follows the store: its relays.
func followers(a *App) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.followers)
}

// An account's reserve goes through its one setter, under the settings lock: it is kept in the
// settings file (and left out of it at 0), read back by another store, and handed to the proxy;
// a share out of range or an unknown account changes nothing.
func TestAnAccountsReserveRoundTripsThroughItsSetter(t *testing.T) {
	opt := testOptions(t, testKeychain(t))
	a, err := Open(opt)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.AddAccount(NewAccount{Name: "work", Kind: "openai", BaseURL: "http://127.0.0.1:9/v1"}, Secret{APIKey: "sk-test-reserve"}); err != nil {
		t.Fatal(err)
	}
	if err := a.SetAccountReserve("work", 20); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(a.SettingsPath())
	if err != nil || !strings.Contains(string(raw), `"reserve": 20`) {
		t.Fatalf("the settings file does not keep the reserve (%v):\n%s", err, raw)
	}
	b, err := Open(opt)
	if err != nil {
		t.Fatal(err)
	}
	if got := b.Accounts(); len(got) != 1 || got[0].Reserve != 20 {
		t.Fatalf("read back: %+v", got)
	}
	if accts, _ := b.setAccounts(b.Accounts()); len(accts) != 1 || accts[0].Reserve != 20 {
		t.Fatalf("the proxy's accounts: %+v", accts)
	}
	for _, bad := range []int{-1, 100, 250} {
		var fe *FieldError
		if err := a.SetAccountReserve("work", bad); !errors.As(err, &fe) || fe.Field != FieldReserve {
			t.Errorf("reserve %d: %v", bad, err)
		}
	}
	var none ErrNoAccount
	if err := a.SetAccountReserve("nobody", 10); !errors.As(err, &none) {
		t.Errorf("an unknown account: %v", err)
	}
	if got := a.Accounts()[0].Reserve; got != 20 {
		t.Errorf("a refused change changed the reserve to %d", got)
	}
	if err := a.SetAccountReserve("work", 0); err != nil {
		t.Fatal(err)
	}
	raw, _ = os.ReadFile(a.SettingsPath())
	if strings.Contains(string(raw), `"reserve"`) || a.Accounts()[0].Reserve != 0 {
		t.Errorf("0 did not clear the reserve:\n%s", raw)
	}
}
