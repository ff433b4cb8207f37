package tray

import (
	"fmt"
	"slices"
	"time"

	"github.com/codexrelay/codexrelay/app"
	"github.com/codexrelay/codexrelay/proxy"
	"github.com/codexrelay/codexrelay/ui/look"
)

// notice is one desktop notification to send.
type notice struct {
	kind  string // an app.Notify* kind
	title string
	body  string
	// account is the account a limit notice is about; noneLeft says that no other account
	// could take a request when it was made (every account rests), so that the pool's notice
	// of the same moment says it for both (actionable).
	account  string
	noneLeft bool
}

// notifier decides, from consecutive snapshots, which desktop notifications to send: an
// account needs a sign-in or its key was rejected, an account hit its limit, every account
// rests, a usage window the account had been limited in reset, the pool runs low on
// five-hour capacity. Each fires when its condition starts, and never more than once per kind,
// account and usage window: a condition that flaps (an account that rests, comes back and
// rests again) is told about once in a window. The window is the account's five-hour quota
// window (the time it resets, to the minute), or a fixed five-hour slot of the clock for an
// account whose quota is not known; the pool's kinds use the windows of the accounts they
// concern. It has no Fyne inside, so that tests can feed it snapshots; the tray sends what it
// returns, for the kinds the settings leave on.
type notifier struct {
	primed bool
	prev   map[string]proxy.AccountStats

	// holds are the conditions that hold now, by kind and account ("" for the pool's).
	holds map[string]bool
	// sent are the windows told about, by kind and account.
	sent map[string][]window
	// limitedIn is, per account and usage window, the window in which the account last
	// reached that limit or rested for its rate limit.
	limitedIn map[usageWindow]time.Time
	// resets are the windows whose reset was seen, per account and usage window.
	resets map[usageWindow]time.Time
}

// usageWindow names one of an account's two usage windows.
type usageWindow struct {
	account string
	weekly  bool
}

// window identifies a usage window: the times it ends, one per account it concerns.
type window []time.Time

// windowSlack is how far apart two readings of one window's end may be: the upstream gives it
// in seconds from now, so it moves a little between readings.
const windowSlack = 2 * time.Minute

// same reports whether w and o are the same window (the same accounts' windows).
func (w window) same(o window) bool {
	return slices.EqualFunc(w, o, func(a, b time.Time) bool { return near(a, b) })
}

func near(a, b time.Time) bool {
	d := a.Sub(b)
	return d > -windowSlack && d < windowSlack
}

// slot is the length of the clock's fixed slots, the window of an account without a quota.
const slot = 5 * time.Hour

// accountWindow is the five-hour window a is in at now: the time its quota window resets,
// rounded to the minute, or the end of now's five-hour slot when its quota is not known (or
// its reset time passed, which means the quota was not read again since).
func accountWindow(a proxy.AccountStats, now time.Time) time.Time {
	if a.Quota != nil && a.Quota.PrimaryResetsAt.After(now) {
		return a.Quota.PrimaryResetsAt.Round(time.Minute)
	}
	return now.Truncate(slot).Add(slot)
}

func newNotifier() *notifier {
	return &notifier{holds: map[string]bool{}, sent: map[string][]window{}, limitedIn: map[usageWindow]time.Time{},
		resets: map[usageWindow]time.Time{}}
}

// edge records whether a condition of kind about account ("" for the pool) holds, and says
// whether to tell about it: when it starts (after the first snapshot), in a window not told
// about yet for that kind and account.
func (n *notifier) edge(kind, account string, holds bool, w window, now time.Time) bool {
	id := kind + "\x00" + account
	was := n.holds[id]
	if !holds {
		delete(n.holds, id)
		return false
	}
	n.holds[id] = true
	if was || !n.primed {
		return false
	}
	for _, s := range n.sent[id] {
		if s.same(w) {
			return false
		}
	}
	// Keep only the windows that may come again: one ends at most five hours ahead.
	n.sent[id] = append(slices.DeleteFunc(n.sent[id], func(s window) bool {
		return len(s) == 0 || slices.MaxFunc(s, time.Time.Compare).Before(now.Add(-time.Hour))
	}), w)
	return true
}

// next returns the notifications snap calls for, given the snapshots before it. The first
// snapshot only sets the baseline: a state the relay started in is on the dashboard already.
// threshold is the low-capacity threshold in percent.
func (n *notifier) next(snap proxy.Snapshot, now time.Time, threshold int) []notice {
	var out []notice
	resting, first := everyAccountResting(snap)
	cur := make(map[string]proxy.AccountStats, len(snap.Accounts))
	for _, a := range snap.Accounts {
		cur[a.Name] = a
	}
	for _, a := range snap.Accounts {
		aw := window{accountWindow(a, now)}

		// Needs a sign-in, or its key was rejected.
		if n.edge(app.NotifyNeedsLogin, a.Name, a.State == proxy.StateNeedsLogin || a.State == proxy.StateKeyRejected, aw, now) {
			out = append(out, needsLoginNotice(a))
		}

		// Hit its limit, with the clock time the rest ends.
		limited := a.State == proxy.StateCooldown && a.CooldownReason == proxy.CooldownRateLimit && a.CooldownUntil != nil
		if n.edge(app.NotifyLimit, a.Name, limited, aw, now) {
			out = append(out, limitNotice(a, resting, first, now))
		}

		// A usage window reset: the reset time passed and the usage dropped; once per window,
		// and only for a window in which the account had reached its limit.
		if p, ok := n.prev[a.Name]; ok && p.Quota != nil && a.Quota != nil && n.primed {
			for _, w := range []struct {
				key      usageWindow
				name     string
				was, is  float64
				resetsAt time.Time
			}{
				{usageWindow{a.Name, false}, "five-hour", p.Quota.PrimaryUsedPercent, a.Quota.PrimaryUsedPercent, p.Quota.PrimaryResetsAt},
				{usageWindow{a.Name, true}, "weekly", p.Quota.SecondaryUsedPercent, a.Quota.SecondaryUsedPercent, p.Quota.SecondaryResetsAt},
			} {
				ended := w.resetsAt.Round(time.Minute)
				if w.resetsAt.IsZero() || w.resetsAt.After(now) || w.is >= w.was || near(n.resets[w.key], ended) {
					continue
				}
				n.resets[w.key] = ended
				if at, ok := n.limitedIn[w.key]; !ok || !near(at, ended) {
					continue // a window the account never ran out of: nothing to tell
				}
				delete(n.limitedIn, w.key)
				out = append(out, notice{kind: app.NotifyWindowReset, title: a.Name + ": the " + w.name + " window reset",
					body: fmt.Sprintf("%s has %.0f%% of its %s window used now (%.0f%% before the reset).", a.Name, w.is, w.name, w.was)})
			}
		}
		n.noteLimits(a, limited)

		// A banked reset would expire unused within a day: once per credit (its expiry).
		at, expiring := creditExpiring(a, now)
		if n.edge(app.NotifyResetCredit, a.Name, expiring, window{at.Round(time.Minute)}, now) {
			out = append(out, creditExpiringNotice(a, at, now))
		}
	}
	for k := range n.limitedIn { // accounts removed meanwhile
		if _, ok := cur[k.account]; !ok {
			delete(n.limitedIn, k)
		}
	}

	// Every enabled account rests or needs a sign-in; it ends when one is ready again.
	if resting || anyReady(snap) {
		if n.edge(app.NotifyAllResting, "", resting, poolWindow(snap, now, enabled), now) {
			body := "No account can take a request: each needs a sign-in or a new key."
			if first != nil {
				body = fmt.Sprintf("No account can take a request now. The first back is %s, at %s.",
					first.Name, look.Clock(*first.CooldownUntil, now))
			}
			out = append(out, notice{kind: app.NotifyAllResting, title: "Every account is resting", body: body})
		}
	}

	// The pool's five-hour capacity fell below the threshold; it ends when it rises above it.
	if left, ok := capacityLeft(snap); ok && left != float64(threshold) {
		if n.edge(app.NotifyLowCapacity, "", left < float64(threshold), poolWindow(snap, now, hasQuota), now) {
			out = append(out, notice{kind: app.NotifyLowCapacity, title: "Five-hour capacity is running low",
				body: fmt.Sprintf("Your ChatGPT accounts have %.0f%% of their five-hour capacity left (the warning is at %d%%).", left, threshold)})
		}
	}

	n.prev, n.primed = cur, true
	return out
}

// noteLimits remembers the usage windows in which a reached a limit: a window read at 100%,
// or the window whose end a rate-limit rest lasts until (the five-hour one when the rest ends
// at neither).
func (n *notifier) noteLimits(a proxy.AccountStats, resting bool) {
	q := a.Quota
	if q == nil {
		return
	}
	five, week := q.PrimaryResetsAt.Round(time.Minute), q.SecondaryResetsAt.Round(time.Minute)
	if q.PrimaryUsedPercent >= 100 && !q.PrimaryResetsAt.IsZero() {
		n.limitedIn[usageWindow{a.Name, false}] = five
	}
	if q.SecondaryUsedPercent >= 100 && !q.SecondaryResetsAt.IsZero() {
		n.limitedIn[usageWindow{a.Name, true}] = week
	}
	if !resting {
		return
	}
	switch {
	case !q.SecondaryResetsAt.IsZero() && near(*a.CooldownUntil, q.SecondaryResetsAt) && !near(*a.CooldownUntil, q.PrimaryResetsAt):
		n.limitedIn[usageWindow{a.Name, true}] = week
	case !q.PrimaryResetsAt.IsZero():
		n.limitedIn[usageWindow{a.Name, false}] = five
	}
}

// enabled and hasQuota choose the accounts a pool-wide notice is about.
func enabled(a proxy.AccountStats) bool { return a.State != proxy.StateDisabled }
func hasQuota(a proxy.AccountStats) bool {
	return enabled(a) && a.Kind == proxy.KindChatGPT && a.Quota != nil
}

// poolWindow is the window of the accounts in snap that which chooses: their windows together.
func poolWindow(snap proxy.Snapshot, now time.Time, which func(proxy.AccountStats) bool) window {
	var w window
	for _, a := range snap.Accounts {
		if which(a) {
			w = append(w, accountWindow(a, now))
		}
	}
	return w
}

// limitNotice says that a reached its limit and until when it rests, and what the relay does
// meanwhile: it sends the requests to the other accounts, unless none is left (resting: every
// account rests; first is the first back, nil when none comes back by itself).
func limitNotice(a proxy.AccountStats, resting bool, first *proxy.AccountStats, now time.Time) notice {
	body := fmt.Sprintf("%s rests until %s; the relay sends its requests to the other accounts meanwhile.",
		a.Name, look.Clock(*a.CooldownUntil, now))
	if resting {
		body = fmt.Sprintf("%s rests until %s, and no other account can take a request now", a.Name, look.Clock(*a.CooldownUntil, now))
		switch {
		case first != nil && first.Name != a.Name:
			body += fmt.Sprintf("; the first back is %s, at %s.", first.Name, look.Clock(*first.CooldownUntil, now))
		case first != nil:
			body += "; it is the first back."
		default:
			body += "."
		}
	}
	return notice{kind: app.NotifyLimit, title: a.Name + " reached its limit", body: body, account: a.Name, noneLeft: resting}
}

// needsLoginNotice says that an account needs a new sign-in, or a new key.
func needsLoginNotice(a proxy.AccountStats) notice {
	if a.Kind == proxy.KindOpenAI {
		return notice{kind: app.NotifyNeedsLogin, title: "The key of " + a.Name + " was rejected",
			body: "The upstream refused the API key of " + a.Name + ": replace it in the Accounts window (Replace key…)."}
	}
	return notice{kind: app.NotifyNeedsLogin, title: a.Name + " needs a new sign-in",
		body: "The ChatGPT sign-in of " + a.Name + " is no longer accepted: sign in again in the Accounts window (Sign in again…)."}
}

// everyAccountResting reports whether every enabled account (at least one) is resting or
// needs a sign-in, and which resting account comes back first (nil when none will by itself).
func everyAccountResting(snap proxy.Snapshot) (bool, *proxy.AccountStats) {
	var first *proxy.AccountStats
	enabled := 0
	for i, a := range snap.Accounts {
		switch a.State {
		case proxy.StateDisabled:
			continue
		case proxy.StateCooldown:
			if a.CooldownUntil != nil && (first == nil || a.CooldownUntil.Before(*first.CooldownUntil)) {
				first = &snap.Accounts[i]
			}
		case proxy.StateNeedsLogin, proxy.StateKeyRejected:
		default:
			return false, nil
		}
		enabled++
	}
	return enabled > 0, first
}

func anyReady(snap proxy.Snapshot) bool {
	for _, a := range snap.Accounts {
		if a.State == proxy.StateReady {
			return true
		}
	}
	return false
}

// capacityLeft is the pool's five-hour capacity left, in percent: the average of
// 100 - PrimaryUsedPercent over the enabled ChatGPT accounts whose quota is known.
func capacityLeft(snap proxy.Snapshot) (float64, bool) {
	var sum float64
	n := 0
	for _, a := range snap.Accounts {
		if !hasQuota(a) {
			continue
		}
		sum += 100 - min(max(a.Quota.PrimaryUsedPercent, 0), 100)
		n++
	}
	if n == 0 {
		return 0, false
	}
	return sum / float64(n), true
}

// askCovers is how long the relay's ask (a banked reset would serve now, with its Redeem
// action) stands for the pool's state: it says that every account rests and when the pool is
// back, so the notices of the same state within it would only repeat it without the action.
const askCovers = 10 * time.Minute

// actionable keeps, of the notices one look at the relay calls for (the notices the settings
// leave on), those that say something the user can act on and no other notice says: one event
// is one notification. A request that finds every account at its limit is one event: the
// accounts' limit notices of that moment go into the pool's "Every account is resting", which
// names them; that implies the five-hour capacity is low, so the low-capacity notice goes too.
// While a recent ask (asked) says that every account rests, with its Redeem action, the pool's
// notices go, and so do the limit notices made while no account was left.
func actionable(out []notice, asked bool) []notice {
	pool := slices.IndexFunc(out, func(n notice) bool { return n.kind == app.NotifyAllResting })
	var limited []string
	for _, n := range out {
		if n.kind == app.NotifyLimit && n.noneLeft {
			limited = append(limited, n.account)
		}
	}
	if pool >= 0 && !asked && len(limited) > 0 {
		verb := " reached its limit. "
		if len(limited) > 1 {
			verb = " reached their limits. "
		}
		out[pool].body = look.Names(limited) + verb + out[pool].body
	}
	return slices.DeleteFunc(out, func(n notice) bool {
		switch n.kind {
		case app.NotifyLimit:
			return n.noneLeft && (pool >= 0 || asked)
		case app.NotifyLowCapacity:
			return pool >= 0 || asked
		case app.NotifyAllResting:
			return asked
		}
		return false
	})
}
