package tray

import (
	"errors"
	"fmt"
	"time"

	"github.com/codexrelay/codexrelay/app"
	"github.com/codexrelay/codexrelay/proxy"
	"github.com/codexrelay/codexrelay/ui/look"
)

// Banked resets in the tray: what an account holds (the tray's account lines), a notification
// when a credit would expire unused within a day, the relay's "ask" turned into a notification
// and a tray action, and a redemption's result (ui/window's resets.go has the windows' side).

// creditExpiringWithin is how soon an unused credit's expiry is worth a notification.
const creditExpiringWithin = 24 * time.Hour

// creditsShort is an account's banked resets in a few words ("" when none or unknown):
// "2 banked resets", "1 banked reset, expires 14:00".
func creditsShort(c *proxy.ResetCredits, now time.Time) string {
	if c == nil || c.Available <= 0 {
		return ""
	}
	s := look.Plural(int64(c.Available), "banked reset")
	if c.NextExpiresAt != nil && c.NextExpiresAt.Sub(now) < 7*24*time.Hour {
		s += ", expires " + look.Clock(*c.NextExpiresAt, now)
	}
	return s
}

// creditExpiring is whether a's next credit expires within a day, unused.
func creditExpiring(a proxy.AccountStats, now time.Time) (time.Time, bool) {
	c := a.ResetCredits
	if c == nil || c.Available <= 0 || c.NextExpiresAt == nil || a.State == proxy.StateDisabled {
		return time.Time{}, false
	}
	t := *c.NextExpiresAt
	return t, t.After(now) && t.Sub(now) <= creditExpiringWithin
}

// creditExpiringNotice tells of a credit about to expire unused.
func creditExpiringNotice(a proxy.AccountStats, at, now time.Time) notice {
	return notice{kind: app.NotifyResetCredit, title: a.Name + ": a banked reset expires soon",
		body: fmt.Sprintf("A banked reset of %s expires at %s unused. Redeem it from the Accounts window, or run `codexrelay accounts redeem %s`.",
			a.Name, look.Clock(at, now), a.Name)}
}

// redeemCandidate is the account the tray offers to redeem for when every account rests: the
// resting ChatGPT account with a credit that expires first ("" when none).
func redeemCandidate(snap proxy.Snapshot) string {
	if snap.ResetCredits.Mode == proxy.ResetCreditsOff {
		return ""
	}
	if resting, _ := everyAccountResting(snap); !resting {
		return ""
	}
	best, bestAt := "", time.Time{}
	for _, a := range snap.Accounts {
		if a.State != proxy.StateCooldown || a.CooldownReason != proxy.CooldownRateLimit || !look.CanRedeem(a) {
			continue
		}
		var at time.Time
		if a.ResetCredits.NextExpiresAt != nil {
			at = *a.ResetCredits.NextExpiresAt
		}
		if best == "" || (!at.IsZero() && (bestAt.IsZero() || at.Before(bestAt))) {
			best, bestAt = a.Name, at
		}
	}
	return best
}

// creditNotice is the notification of a credit event of the relay (ok false: none).
func creditNotice(e proxy.CreditEvent, now time.Time) (notice, bool) {
	switch e.Kind {
	case proxy.CreditAsk:
		body := fmt.Sprintf("Every account is resting; %s holds a banked reset that would serve now", e.Account)
		if !e.BackAt.IsZero() {
			body += fmt.Sprintf(" (the pool is back at %s otherwise)", look.Clock(e.BackAt, now))
		}
		body += fmt.Sprintf(". Choose “Redeem a banked reset of %s” in the tray menu, or run `codexrelay accounts redeem %s`.", e.Account, e.Account)
		return notice{kind: app.NotifyResetCredit, title: "A banked reset would serve now", body: body}, true
	case proxy.CreditRedeemed:
		return redeemedNotice(*e.Result), true
	case proxy.CreditRedeemFailed:
		return notice{kind: app.NotifyResetCredit, title: e.Account + ": the banked reset was not redeemed", body: e.Error}, true
	}
	return notice{}, false
}

// redeemedNotice is the notification of what a redemption did.
func redeemedNotice(r proxy.RedeemResult) notice {
	return notice{kind: app.NotifyResetCredit, title: r.Account + ": banked reset redeemed", body: look.Redeemed(r)}
}

// creditEvent turns the relay's credit events into notifications (the tray process).
func (t *TrayApp) creditEvent(e proxy.CreditEvent) {
	n, ok := creditNotice(e, t.now())
	switch {
	case !ok || !t.relay.Settings().Notifications.Enabled(n.kind):
	case e.Kind == proxy.CreditAsk:
		account := e.Account
		now := t.now()
		t.askedAt.Store(&now) // it says every account rests: the tray's notices of that are left out
		t.actNotify(n.title, n.body, "Redeem a banked reset of "+account, func() { t.redeem(account) })
	default:
		t.notes.add(n.title, n.body)
	}
}

// redeem spends a banked reset of the named account, off the tray's goroutine. The relay's
// credit events tell a success and a failed redemption; a redemption that never started (no
// credit, no such account) is told here.
func (t *TrayApp) redeem(name string) {
	t.async(func() {
		_, err := t.relay.RedeemCredit(name)
		if errors.Is(err, proxy.ErrNoResetCredit) || errors.Is(err, proxy.ErrNoSuchAccount) || errors.Is(err, proxy.ErrNotChatGPT) {
			t.notes.add(name+": the banked reset was not redeemed", look.RedeemFailure(name, err))
		}
		t.changed()
	})
}
