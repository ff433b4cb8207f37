package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/codexrelay/codexrelay/app/ledger"
	"github.com/codexrelay/codexrelay/app/localapi"
	"github.com/codexrelay/codexrelay/proxy"
)

// Banked resets on the app side: the reset-credits setting, a redemption asked for by the
// command line or a window, and what a redemption leaves behind (a ledger row, the listeners'
// notifications).
//
// A redemption runs in the process that serves: its per-account lock and the intent it keeps
// until an answer (the redeem_request_id a retry reuses) live there. RedeemCredit in the
// serving process redeems in place; in another process (the command line, the window process)
// it asks the running relay through the local API (POST /relay/accounts/{name}/redeem-credit);
// with no relay running it redeems itself, through a relay that never listens, and writes the
// ledger row itself.

// ResetCredits is the reset-credit policy the settings say.
func (a *App) ResetCredits() string { return cmpOr(a.Settings().ResetCredits, proxy.ResetCreditsAsk) }

// applyResetCredits is apply's part for the policy (Open applies the file through it too, so
// it also hands the proxy the app's credit hook, once).
func (r *Relay) applyResetCredits(prev, next Settings) []error {
	r.credits.once.Do(func() {
		r.Proxy.SetCreditHook(r.creditEvent)
		r.Proxy.SetRedeemIntentHook(r.writePendingRedeem)
	})
	if prev.ResetCredits == next.ResetCredits {
		return nil
	}
	if err := r.Proxy.SetResetCredits(next.ResetCredits); err != nil {
		return []error{checkFileSetting(SettingResetCredits, next.ResetCredits)}
	}
	return nil
}

// creditState is the App's part of banked resets.
type creditState struct {
	once      sync.Once
	fileMu    sync.Mutex // redeem-pending.json
	mu        sync.Mutex
	listeners []func(proxy.CreditEvent)
}

// OnCreditEvent has f told of each redemption, failed redemption and "ask" signal of the relay
// this process runs (the tray turns them into notifications). f must not block.
func (r *Relay) OnCreditEvent(f func(proxy.CreditEvent)) {
	r.credits.mu.Lock()
	r.credits.listeners = append(r.credits.listeners, f)
	r.credits.mu.Unlock()
}

// creditEvent is the proxy's credit hook: the kept intent, the ledger row, then the listeners.
func (r *Relay) creditEvent(e proxy.CreditEvent) {
	if e.Kind == proxy.CreditRedeemed || e.Kind == proxy.CreditRedeemFailed {
		r.keepPendingRedeem(e.Account)
	}
	if row, ok := eventRow(e); ok {
		if l := r.Ledger(); l != nil {
			go func() { // the hook must not block a request on the database
				if err := l.RecordEvent(context.Background(), row); err != nil {
					r.log.Warn("usage ledger: a redemption was not recorded", "error", err)
				}
			}()
		} else if !r.serving() {
			r.recordEventAlone(row)
		}
	}
	r.credits.mu.Lock()
	ls := slices.Clone(r.credits.listeners)
	r.credits.mu.Unlock()
	for _, f := range ls {
		f(e)
	}
}

// eventRow is the ledger row of a credit event (redemptions and their failures; an "ask" is
// not history).
func eventRow(e proxy.CreditEvent) (ledger.Event, bool) {
	var kind string
	var detail any
	switch e.Kind {
	case proxy.CreditRedeemed:
		kind, detail = ledger.EventCreditRedeemed, e.Result
	case proxy.CreditRedeemFailed:
		kind, detail = ledger.EventCreditRedeemFailed, map[string]any{"error": e.Error, "pending": e.Pending}
	default:
		return ledger.Event{}, false
	}
	b, _ := json.Marshal(detail)
	return ledger.Event{Time: e.Time, Kind: kind, Account: e.Account, Detail: string(b)}, true
}

// recordEventAlone writes an event in a process that serves nothing (the command line
// redeeming with no relay running): it opens the ledger for the one row. With the ledger off,
// nothing is written.
func (a *App) recordEventAlone(row ledger.Event) {
	s := a.Settings().Usage
	if s.Off {
		return
	}
	l, err := ledger.Open(ledger.Options{Path: a.LedgerPath(), Now: a.opt.Now, Prices: s.Prices})
	if err != nil {
		a.log.Warn("usage ledger: a redemption was not recorded", "error", err)
		return
	}
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := l.RecordEvent(ctx, row); err != nil {
		a.log.Warn("usage ledger: a redemption was not recorded", "error", err)
	}
}

// serving reports whether this process runs a relay service.
func (r *Relay) serving() bool {
	r.usage.mu.Lock()
	defer r.usage.mu.Unlock()
	return r.usage.users > 0
}

// redeemTimeout bounds a redemption asked for by hand, read-back included.
const redeemTimeout = 90 * time.Second

// RedeemCredit spends one of the named ChatGPT account's banked resets, the one that expires
// first, in the process that serves (see the top of this file), and returns what the backend
// answered with the account's usage and credits read back. Errors match (errors.Is)
// proxy.ErrNoSuchAccount, proxy.ErrNotChatGPT, proxy.ErrNoResetCredit and
// proxy.ErrRedeemPending (no answer came: trying again reuses the same request, so at most one
// credit is spent for it).
func (a *App) RedeemCredit(name string) (proxy.RedeemResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), redeemTimeout)
	defer cancel()
	r := a.runningRelay()
	if r == nil || !r.serving() {
		if res, err, asked := a.redeemRemote(ctx, name); asked {
			return res, err
		}
	}
	if r == nil { // no relay of this folder serves: redeem here, through one that never listens
		r = a.NewRelay()
	}
	return r.Proxy.RedeemCredit(ctx, name)
}

// redeemRemote asks the relay running for this settings folder to redeem (a signed request,
// no key sent: see RelayClient); asked is false when no relay of this folder serves (redeem
// here). The relay's error answers match the proxy's errors again (localapi.Error).
func (a *App) redeemRemote(ctx context.Context, name string) (res proxy.RedeemResult, err error, asked bool) {
	rc, err := a.RunningRelay(0) // ctx bounds it
	if err != nil || rc == nil {
		return res, err, err != nil
	}
	res, err = rc.RedeemCredit(ctx, name)
	var dial *net.OpError
	var answer *localapi.Error
	switch {
	case err == nil, errors.As(err, &answer):
		return res, err, true
	case errors.As(err, &dial) && dial.Op == "dial":
		return res, nil, false // no connection, nothing sent: the relay stopped meanwhile
	case errors.Is(err, ErrNotTheRelay):
		return res, fmt.Errorf("%w; nothing was redeemed", err), true
	}
	// The relay may have sent the consume before the line broke: redeeming here with a new id
	// could spend a second banked reset.
	return res, fmt.Errorf("the running relay did not answer (%v): %w", err, proxy.ErrRedeemPending), true
}

// NotifyResetCredit is the notification kind of banked resets: a credit that expires within
// a day unused, the relay's question when every account rests (ask), a redemption's result.
const NotifyResetCredit = "reset_credit"

// pendingRedeemName is the file, in the settings folder, that keeps each account's redemption
// whose answer never arrived (proxy.PendingRedeem, by account ID), so that the next try, in
// this process or a later one, sends the same redeem_request_id. It holds no secret.
const pendingRedeemName = "redeem-pending.json"

// loadPendingRedeems hands the proxy the redemptions an earlier process kept.
func (r *Relay) loadPendingRedeems() {
	kept := r.readPendingRedeems()
	for _, m := range r.Accounts() {
		if p, ok := kept[m.ID]; ok {
			r.Proxy.SetPendingRedeem(m.Name, p)
		}
	}
}

func (a *App) readPendingRedeems() map[string]proxy.PendingRedeem {
	kept := map[string]proxy.PendingRedeem{}
	path := filepath.Join(a.opt.ConfigDir, pendingRedeemName)
	// A link planted there is neither read nor followed (writePendingRedeem replaces it).
	if st, err := os.Lstat(path); err != nil || !st.Mode().IsRegular() {
		return kept
	}
	b, err := readRegularFile(path, 1<<20)
	if err == nil {
		json.Unmarshal(b, &kept)
	}
	return kept
}

// keepPendingRedeem writes down, or clears, the account's redemption whose answer never
// arrived, as the proxy holds it after a redemption ended.
func (r *Relay) keepPendingRedeem(account string) {
	if err := r.writePendingRedeem(account); err != nil {
		r.log.Warn("the redemption waiting for an answer could not be kept: a retry after a restart may spend a second banked reset", "error", err)
	}
}

// writePendingRedeem writes down, or clears, the account's redemption as the proxy holds it:
// the proxy's intent hook, before a consume is sent (so that a crash while it is on the wire
// leaves the intent for the next process), and after each redemption.
func (r *Relay) writePendingRedeem(account string) error {
	id := ""
	for _, m := range r.Accounts() {
		if m.Name == account {
			id = m.ID
		}
	}
	if id == "" {
		return nil
	}
	r.credits.fileMu.Lock()
	defer r.credits.fileMu.Unlock()
	kept := r.readPendingRedeems()
	p, ok := r.Proxy.PendingRedeem(account)
	if _, had := kept[id]; !ok && !had {
		return nil
	}
	if ok {
		kept[id] = p
	} else {
		delete(kept, id)
	}
	path := filepath.Join(r.opt.ConfigDir, pendingRedeemName)
	var err error
	if len(kept) == 0 {
		if err = os.Remove(path); errors.Is(err, fs.ErrNotExist) {
			err = nil
		}
	} else {
		b, _ := json.MarshalIndent(kept, "", "  ")
		err = replaceFile(path, b, 0o600) // never through a link: a link there is replaced
	}
	return err
}

// RedeemWorthAt is the share of a window used from which a banked reset helps: below it, the
// account has most of its windows left, and a redemption (which also restarts the weekly window
// from that moment, openai/codex #42888) gives back little.
const RedeemWorthAt = 90.0

// RedeemHelps says whether spending a banked reset of the account whose state is st would
// help: it rests at its limit, or a window is at least RedeemWorthAt used. why says, when it
// would not, what the account has left.
func RedeemHelps(st proxy.AccountStats) (helps bool, why string) {
	q := st.Quota
	switch {
	case st.State == proxy.StateCooldown && st.CooldownReason == proxy.CooldownRateLimit:
		return true, ""
	case q == nil:
		return false, "its usage is not known (no quota read yet)"
	case q.PrimaryUsedPercent >= RedeemWorthAt || q.SecondaryUsedPercent >= RedeemWorthAt:
		return true, ""
	}
	return false, fmt.Sprintf("it has used %.0f%% of its five-hour window and %.0f%% of its weekly one", q.PrimaryUsedPercent, q.SecondaryUsedPercent)
}
