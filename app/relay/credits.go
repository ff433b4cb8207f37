package relay

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/codexrelay/codexrelay/app"
	"github.com/codexrelay/codexrelay/app/ledger"
	"github.com/codexrelay/codexrelay/proxy"
)

// Banked resets on the relay's side: the reset-credits setting applied to the proxy, a
// redemption asked for by the command line or a window, and what a redemption leaves behind
// (a ledger row, the kept intent, the listeners' notifications).
//
// A redemption runs in the process that serves: its per-account lock and the intent it keeps
// until an answer (the redeem_request_id a retry reuses) live there. RedeemCredit in the
// serving process redeems in place; in another process (the command line, the window process)
// it asks the running relay through the local API (app.App.RedeemCredit); with no relay running
// it redeems itself, through a relay that never listens, and writes the ledger row itself.

// applyResetCredits is follow's part for the policy.
func (r *Relay) applyResetCredits(prev, next app.Settings) []error {
	if prev.ResetCredits == next.ResetCredits {
		return nil
	}
	if err := r.Proxy.SetResetCredits(next.ResetCredits); err != nil {
		return []error{checkFileSetting(app.SettingResetCredits, next.ResetCredits)}
	}
	return nil
}

// creditState is the relay's part of banked resets: who is told of each credit event.
type creditState struct {
	mu        sync.Mutex
	listeners []func(proxy.CreditEvent)
}

// OnCreditEvent has f told of each redemption, failed redemption and "ask" signal of the relay
// (the tray turns them into notifications). f must not block.
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
					r.Log().Warn("usage ledger: a redemption was not recorded", "error", err)
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
func (r *Relay) recordEventAlone(row ledger.Event) {
	s := r.Settings().Usage
	if s.Off {
		return
	}
	l, err := ledger.Open(ledger.Options{Path: r.LedgerPath(), Now: r.Now, Prices: s.Prices})
	if err != nil {
		r.Log().Warn("usage ledger: a redemption was not recorded", "error", err)
		return
	}
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := l.RecordEvent(ctx, row); err != nil {
		r.Log().Warn("usage ledger: a redemption was not recorded", "error", err)
	}
}

// serving reports whether this relay runs a service.
func (r *Relay) serving() bool {
	r.usage.mu.Lock()
	defer r.usage.mu.Unlock()
	return r.usage.users > 0
}

// RedeemCredit spends one of the named ChatGPT account's banked resets, the one that expires
// first, in the process that serves (see the top of this file): here when this relay serves,
// else through the relay running for the settings folder, else here, through this relay that
// does not listen. It returns what the backend answered with the account's usage and credits
// read back. Errors match (errors.Is) proxy.ErrNoSuchAccount, proxy.ErrNotChatGPT,
// proxy.ErrNoResetCredit and proxy.ErrRedeemPending (no answer came: trying again reuses the
// same request, so at most one credit is spent for it).
func (r *Relay) RedeemCredit(name string) (proxy.RedeemResult, error) {
	if !r.serving() {
		if res, err := r.App.RedeemCredit(name); !errors.Is(err, app.ErrNoRelay) {
			return res, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), app.RedeemTimeout)
	defer cancel()
	return r.Proxy.RedeemCredit(ctx, name)
}

// RedeemCredit spends one of the named account's banked resets for a program that opened the
// store alone (the command line, the window process): through the relay running for its
// settings folder, or, with none running, through a relay made here for it that never listens.
func RedeemCredit(store *app.App, name string) (proxy.RedeemResult, error) {
	if res, err := store.RedeemCredit(name); !errors.Is(err, app.ErrNoRelay) {
		return res, err
	}
	r := New(store)
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), app.RedeemTimeout)
	defer cancel()
	return r.Proxy.RedeemCredit(ctx, name)
}

// loadPendingRedeems hands the proxy the redemptions an earlier process kept.
func (r *Relay) loadPendingRedeems() {
	kept := r.PendingRedeems()
	for _, m := range r.Accounts() {
		if p, ok := kept[m.ID]; ok {
			r.Proxy.SetPendingRedeem(m.Name, p)
		}
	}
}

// keepPendingRedeem writes down, or clears, the account's redemption whose answer never
// arrived, as the proxy holds it after a redemption ended.
func (r *Relay) keepPendingRedeem(account string) {
	if err := r.writePendingRedeem(account); err != nil {
		r.Log().Warn("the redemption waiting for an answer could not be kept: a retry after a restart may spend a second banked reset", "error", err)
	}
}

// writePendingRedeem writes down, or clears, the account's redemption as the proxy holds it
// (app.App.KeepPendingRedeem): the proxy's intent hook, before a consume is sent (so that a
// crash while it is on the wire leaves the intent for the next process), and after each
// redemption.
func (r *Relay) writePendingRedeem(account string) error {
	for _, m := range r.Accounts() {
		if m.Name != account {
			continue
		}
		if p, ok := r.Proxy.PendingRedeem(account); ok {
			return r.KeepPendingRedeem(m.ID, &p)
		}
		return r.KeepPendingRedeem(m.ID, nil)
	}
	return nil
}
