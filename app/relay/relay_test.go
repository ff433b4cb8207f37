package relay

import (
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/codexrelay/codexrelay/app"
	"github.com/codexrelay/codexrelay/proxy"
)

// openStore opens a store on a settings folder of the test's own (an existing install with the
// local key off), with env as its whole environment and k as its keychain.
func openStore(t *testing.T, k app.Keychain, env map[string]string) *app.App {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "settings.json"), []byte(`{"generation": 0, "accounts": []}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := app.Open(app.Options{ConfigDir: dir, Keychain: k, Getenv: func(name string) string { return env[name] }})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// A relay follows its store from New on: a change made through the store reaches its proxy,
// the file's generation last; the catalog the proxy was built with (the environment's TTL) is
// not applied again, and a setting the file sets later wins over the environment. Once closed,
// the store's changes reach it no more.
func TestARelayFollowsItsStoreUntilClosed(t *testing.T) {
	store := openStore(t, app.Keychain{Service: "codexrelay-test-unused"}, map[string]string{"MODELS_CACHE_MS": "300000"})
	r := New(store)
	if got := r.Proxy.Stats().Catalog.TTLMs; got != 300000 {
		t.Fatalf("the TTL the relay starts with: %d, want the environment's 300000", got)
	}
	if err := store.Set(app.SettingTTL, "1200000"); err != nil {
		t.Fatal(err)
	}
	snap := r.Proxy.Stats()
	if snap.Catalog.TTLMs != 1200000 || snap.SettingsGeneration != store.Settings().Generation || snap.SettingsGeneration == 0 {
		t.Fatalf("after a change through the store: TTL %d, generation %d (the file's %d)",
			snap.Catalog.TTLMs, snap.SettingsGeneration, store.Settings().Generation)
	}
	r.Close()
	if err := store.Set(app.SettingTTL, "1800000"); err != nil {
		t.Fatal(err)
	}
	if after := r.Proxy.Stats(); after.Catalog.TTLMs != 1200000 || after.SettingsGeneration != snap.SettingsGeneration {
		t.Fatalf("a closed relay followed the store: TTL %d, generation %d", after.Catalog.TTLMs, after.SettingsGeneration)
	}
}

// A program that opened the store alone redeems through the relay running for its folder; with
// none running, the store says so having sent nothing, and RedeemCredit redeems in this process
// instead, through a relay made for it (an API key holds no banked reset: the proxy's own
// answer says the redemption ran here).
func TestRedeemCreditWithNoRelayRunningRedeemsHere(t *testing.T) {
	store := openStore(t, testKeychain(t), nil)
	m, err := store.AddAccount(app.NewAccount{Name: "work", Kind: "openai", BaseURL: "http://127.0.0.1:9/v1"}, app.Secret{APIKey: "sk-test-redeem"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.RemoveAccount(m.Name) })
	if _, err := store.RedeemCredit("work"); !errors.Is(err, app.ErrNoRelay) {
		t.Fatalf("the store alone, no relay running: %v", err)
	}
	if _, err := RedeemCredit(store, "work"); !errors.Is(err, proxy.ErrNotChatGPT) {
		t.Fatalf("redeemed here: %v", err)
	}
}

// testKeychain is the real system keychain under a service name of the test's own. Keychain
// tests need a Secret Service: `make test` starts gnome-keyring in a private D-Bus session
// (CODEXRELAY_TEST_KEYRING=1) and there a missing one is a failure.
func testKeychain(t *testing.T) app.Keychain {
	t.Helper()
	if os.Getenv("CODEXRELAY_TEST_KEYRING") == "" && os.Getenv("DBUS_SESSION_BUS_ADDRESS") == "" {
		t.Skip("no Secret Service: run `make test`, which starts gnome-keyring in a private D-Bus session")
	}
	k := app.Keychain{Service: "codexrelay-test-" + rand.Text()[:12]}
	if err := k.Set("probe", "x"); err != nil {
		t.Fatalf("the Secret Service does not work: %v", err)
	}
	k.Delete("probe")
	return k
}
