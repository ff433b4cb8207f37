package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codexrelay/codexrelay/app/ledger"
	"github.com/codexrelay/codexrelay/proxy"
)

func TestResetCreditsSetting(t *testing.T) {
	opt := Options{ConfigDir: t.TempDir(), Getenv: func(string) string { return "" }}
	a, err := OpenRelay(opt)
	if err != nil {
		t.Fatal(err)
	}
	if a.ResetCredits() != proxy.ResetCreditsAsk || a.Proxy.ResetCreditsMode() != proxy.ResetCreditsAsk {
		t.Fatalf("default %s / %s", a.ResetCredits(), a.Proxy.ResetCreditsMode())
	}
	if err := a.Set(SettingResetCredits, proxy.ResetCreditsAuto); err != nil {
		t.Fatal(err)
	}
	if a.Settings().ResetCredits != "auto" || a.Proxy.ResetCreditsMode() != proxy.ResetCreditsAuto {
		t.Fatalf("after set: %q / %s", a.Settings().ResetCredits, a.Proxy.ResetCreditsMode())
	}
	var fe *FieldError
	if err := a.Set(SettingResetCredits, "always"); !errors.As(err, &fe) || fe.Field != string(SettingResetCredits) || a.Proxy.ResetCreditsMode() != proxy.ResetCreditsAuto {
		t.Fatalf("a bad mode: %v", err)
	}
	row, _ := LookupSetting(string(SettingResetCredits))
	if _, err := row.Parse("aut"); err == nil || !strings.Contains(err.Error(), `"auto"`) {
		t.Fatalf("the table row's parse: %v", err)
	}
	// A new process follows the file from its start.
	b, err := OpenRelay(opt)
	if err != nil {
		t.Fatal(err)
	}
	if b.Proxy.ResetCreditsMode() != proxy.ResetCreditsAuto || row.Show(b.App) != "auto" {
		t.Fatalf("reopened: %s", b.Proxy.ResetCreditsMode())
	}
	// The default is not written.
	if err := a.Set(SettingResetCredits, proxy.ResetCreditsAsk); err != nil || a.Settings().ResetCredits != "" {
		t.Fatalf("ask: %q %v", a.Settings().ResetCredits, err)
	}
	b.Reload()
	if b.Proxy.ResetCreditsMode() != proxy.ResetCreditsAsk {
		t.Fatalf("the other process did not follow: %s", b.Proxy.ResetCreditsMode())
	}
}

// creditUpstream is a ChatGPT backend holding banked resets (list, consume, usage).
type creditUpstream struct {
	*httptest.Server
	mu       sync.Mutex
	credits  map[string]bool // id: available
	consumes []string        // redeem_request_ids
	// loseNext spends the next consume's credit and answers 502, as if the answer were lost.
	loseNext bool
	answered map[string]bool // redeem_request_ids that spent a credit
	// onConsume, when set, runs as a consume arrives, before its credit is spent.
	onConsume func()
	// used is the five-hour window's used percent (a redemption sets it to 0, unless
	// resetsNothing: the backend takes the credit, answers windows_reset 0 and resets nothing).
	used          float64
	resetsNothing bool
}

func newCreditUpstream(t *testing.T, ids ...string) *creditUpstream {
	u := &creditUpstream{credits: map[string]bool{}, answered: map[string]bool{}}
	for _, id := range ids {
		u.credits[id] = true
	}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		u.mu.Lock()
		defer u.mu.Unlock()
		switch r.URL.Path {
		case "/backend-api/wham/usage":
			fmt.Fprintf(w, `{"rate_limit":{"primary_window":{"used_percent":%g,"limit_window_seconds":18000,"reset_after_seconds":600}}}`, u.used)
		case "/backend-api/wham/rate-limit-reset-credits":
			var list []string
			n := 0
			for i, id := range ids {
				if u.credits[id] {
					n++
					list = append(list, fmt.Sprintf(`{"id":%q,"status":"available","expires_at":"2027-01-0%dT00:00:00Z"}`, id, i+1))
				}
			}
			fmt.Fprintf(w, `{"credits":[%s],"available_count":%d}`, strings.Join(list, ","), n)
		case "/backend-api/wham/rate-limit-reset-credits/consume":
			var req struct{ CreditID, RedeemRequestID string }
			json.NewDecoder(r.Body).Decode(&struct {
				CreditID        *string `json:"credit_id"`
				RedeemRequestID *string `json:"redeem_request_id"`
			}{&req.CreditID, &req.RedeemRequestID})
			u.consumes = append(u.consumes, req.RedeemRequestID)
			if u.onConsume != nil {
				u.onConsume()
			}
			if u.answered[req.RedeemRequestID] { // idempotent: the same intent spends nothing more
				fmt.Fprint(w, `{"code":"already_redeemed","credit":{"status":"redeemed"},"windows_reset":0}`)
				return
			}
			u.answered[req.RedeemRequestID] = true
			u.credits[req.CreditID] = false
			if u.loseNext {
				u.loseNext = false
				w.WriteHeader(http.StatusBadGateway)
				return
			}
			if u.resetsNothing {
				fmt.Fprint(w, `{"code":"reset","credit":{"status":"redeemed"},"windows_reset":0}`)
				return
			}
			u.used = 0
			fmt.Fprint(w, `{"code":"reset","credit":{"status":"redeemed"},"windows_reset":1}`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(u.Close)
	return u
}

// freeLoopback is a loopback address nothing listens on.
func freeLoopback(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// creditApp is an App on a folder of the test's own, with one ChatGPT account "plus" whose
// backend holds the banked resets c1 and c2, and a listen address nothing serves.
func creditApp(t *testing.T) (*Relay, Options, *creditUpstream) {
	t.Helper()
	k := testKeychain(t)
	opt := testOptions(t, k)
	up := newCreditUpstream(t, "c1", "c2")
	a, err := OpenRelay(opt)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Set(SettingListen, freeLoopback(t)); err != nil {
		t.Fatal(err)
	}
	m, err := a.AddAccount(NewAccount{Name: "plus", Kind: "chatgpt", BaseURL: up.URL + "/backend-api/codex"},
		Secret{AccessToken: "eyJ-access", RefreshToken: "rt-1", AccountID: "acc-1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Delete(accountUser(m.ID)) })
	return a, opt, up
}

// The command line redeems through the running relay when there is one, and by itself when
// there is none; each redemption is a row in the ledger's events.
func TestRedeemCreditHereOrThroughTheRunningRelay(t *testing.T) {
	a, opt, up := creditApp(t)

	// No relay runs: this process redeems, and writes the row itself.
	res, err := a.RedeemCredit("plus")
	if err != nil || res.Code != "reset" || res.Remaining == nil || res.Remaining.Available != 1 {
		t.Fatalf("here: %+v, %v", res, err)
	}

	// A relay runs (another App on the same settings, holding the folder's instance lock).
	relay, _ := runningRelay(t, opt)
	var told []proxy.CreditEvent
	var mu sync.Mutex
	relay.OnCreditEvent(func(e proxy.CreditEvent) { mu.Lock(); told = append(told, e); mu.Unlock() })
	res2, err := a.RedeemCredit("plus")
	if err != nil || res2.Code != "reset" || res2.RequestID == res.RequestID {
		t.Fatalf("through the relay: %+v, %v", res2, err)
	}
	mu.Lock()
	if len(told) != 1 || told[0].Kind != proxy.CreditRedeemed || told[0].Result.RequestID != res2.RequestID {
		t.Errorf("the relay's listeners: %+v", told)
	}
	mu.Unlock()
	// Its errors keep their meaning across the process boundary.
	// Asked again at once, it shares the redemption that just spent one (issue 49: ten at once
	// spent three), and spends nothing.
	if res3, err := a.RedeemCredit("plus"); err != nil || !res3.Shared || res3.RequestID != res2.RequestID {
		t.Fatalf("asked again at once: %+v, %v", res3, err)
	}
	if _, err := a.RedeemCredit("nobody"); !errors.Is(err, proxy.ErrNoSuchAccount) {
		t.Fatalf("unknown account: %v", err)
	}
	up.mu.Lock()
	if len(up.consumes) != 2 {
		t.Errorf("%d consumes", len(up.consumes))
	}
	up.mu.Unlock()

	l, err := ledger.Open(ledger.Options{Path: a.LedgerPath(), ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var evs []ledger.Event
	waitFor(t, func() bool { // the serving relay writes its row off the request
		evs, err = l.Events(context.Background(), time.Time{}, 0)
		return err != nil || len(evs) >= 2
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 || evs[0].Kind != ledger.EventCreditRedeemed || evs[0].Account != "plus" ||
		!strings.Contains(evs[1].Detail, res.RequestID) || strings.Contains(evs[0].Detail+evs[1].Detail, "eyJ-access") {
		t.Fatalf("ledger events %+v", evs)
	}
}

// A redemption whose answer is lost, with no relay running, is tried again by a later command
// with the same redeem_request_id: the intent is kept in the settings folder, so one intent
// spends one credit even across processes.
func TestALostRedemptionIsRetriedWithTheSameIDByTheNextProcess(t *testing.T) {
	a, opt, up := creditApp(t)
	up.mu.Lock()
	up.loseNext = true
	up.mu.Unlock()
	if _, err := a.RedeemCredit("plus"); !errors.Is(err, proxy.ErrRedeemPending) {
		t.Fatalf("lost answer: %v", err)
	}
	path := filepath.Join(opt.ConfigDir, pendingRedeemName)
	b, err := os.ReadFile(path)
	if err != nil || strings.Contains(string(b), "eyJ-access") {
		t.Fatalf("the kept intent: %v %s", err, b)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", st.Mode())
	}
	// The next command is another process: a new App on the same folder.
	retriesTheKeptIntent(t, opt, up)
}

// retriesTheKeptIntent opens the folder of opt as the next process does and redeems again: the
// kept intent is retried with the same redeem_request_id, one credit is spent in all, and the
// intent is let go after its answer.
func retriesTheKeptIntent(t *testing.T, opt Options, up *creditUpstream) {
	t.Helper()
	next, err := OpenRelay(opt)
	if err != nil {
		t.Fatal(err)
	}
	res, err := next.RedeemCredit("plus")
	if err != nil || !res.Retried {
		t.Fatalf("retry: %+v %v", res, err)
	}
	up.mu.Lock()
	consumes, spent := up.consumes, 0
	for _, avail := range up.credits {
		if !avail {
			spent++
		}
	}
	up.mu.Unlock()
	if len(consumes) != 2 || consumes[0] != consumes[1] || spent != 1 {
		t.Fatalf("consumes %v, %d credits spent", consumes, spent)
	}
	if _, err := os.Stat(filepath.Join(opt.ConfigDir, pendingRedeemName)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the intent is still kept after its answer: %v", err)
	}
}

// A process killed while its consume is on the wire (kill -9: nothing runs after) leaves the
// intent on disk, so that the next process retries it with the same redeem_request_id and one
// intent spends one credit. The folder as the kill left it is copied as the consume arrives.
func TestARedemptionCutByACrashIsRetriedWithTheSameID(t *testing.T) {
	a, opt, up := creditApp(t)
	crashed := t.TempDir()
	up.mu.Lock()
	up.onConsume = func() {
		up.onConsume = nil
		entries, err := os.ReadDir(opt.ConfigDir)
		if err != nil {
			t.Error(err)
			return
		}
		for _, e := range entries {
			if !e.Type().IsRegular() {
				continue
			}
			b, err := os.ReadFile(filepath.Join(opt.ConfigDir, e.Name()))
			if err == nil {
				err = os.WriteFile(filepath.Join(crashed, e.Name()), b, 0o600)
			}
			if err != nil {
				t.Error(err)
			}
		}
	}
	up.loseNext = true // the killed process never reads the answer
	up.mu.Unlock()
	a.RedeemCredit("plus")
	if _, err := os.Stat(filepath.Join(crashed, pendingRedeemName)); err != nil {
		t.Fatalf("the intent was not on disk while its consume was on the wire: %v", err)
	}
	restarted := opt
	restarted.ConfigDir = crashed
	retriesTheKeptIntent(t, restarted, up)
}

// redeem-pending.json is replaced, never written through a link planted in its place (issue
// 30, 9): the link's target keeps its contents, and a link is not read as kept intents.
func TestThePendingRedemptionIsNeverWrittenThroughALink(t *testing.T) {
	a, opt, up := creditApp(t)
	decoy := filepath.Join(t.TempDir(), "decoy")
	if err := os.WriteFile(decoy, []byte("the decoy's own contents"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(opt.ConfigDir, pendingRedeemName)
	if err := os.Symlink(decoy, path); err != nil {
		t.Fatal(err)
	}
	up.mu.Lock()
	up.loseNext = true
	up.mu.Unlock()
	if _, err := a.RedeemCredit("plus"); !errors.Is(err, proxy.ErrRedeemPending) {
		t.Fatalf("lost answer: %v", err)
	}
	if b, _ := os.ReadFile(decoy); string(b) != "the decoy's own contents" {
		t.Fatalf("the link's target was written: %q", b)
	}
	st, err := os.Lstat(path)
	if err != nil || !st.Mode().IsRegular() {
		t.Fatalf("the intent is not kept in a file of its own: %v %v", st, err)
	}
}

// accounts redeem spends a banked reset only where it helps (the account at or near its limit)
// unless --force; afterwards it reads the windows again, and says when nothing was reset.
func TestRedeemOnlyWhereItHelpsAndSayWhenNothingWasReset(t *testing.T) {
	_, opt, up := creditApp(t)
	set := func(used float64, nothing bool) {
		up.mu.Lock()
		up.used, up.resetsNothing = used, nothing
		up.mu.Unlock()
	}
	consumes := func() int { up.mu.Lock(); defer up.mu.Unlock(); return len(up.consumes) }
	set(12, false)
	code, out, errs := runCLI(t, opt, "", "accounts", "redeem", "plus")
	if code != 1 || !strings.Contains(errs, "12% of its five-hour window") || !strings.Contains(errs, "--force") || consumes() != 0 {
		t.Fatalf("at 12%%: %d %q %q, %d consumes", code, out, errs, consumes())
	}
	code, out, errs = runCLI(t, opt, "", "accounts", "redeem", "--force", "plus")
	if code != 0 || !strings.Contains(out, "1 window reset") || !strings.Contains(out, "five-hour window is 0% used") || strings.Contains(out, "Nothing was reset") {
		t.Fatalf("--force: %d %q %q", code, out, errs)
	}
	set(97, true)
	code, out, errs = runCLI(t, opt, "", "accounts", "redeem", "plus")
	if code != 0 || !strings.Contains(out, "Nothing was reset") || !strings.Contains(out, "97% used") {
		t.Fatalf("a redemption that reset nothing: %d %q %q", code, out, errs)
	}
}
