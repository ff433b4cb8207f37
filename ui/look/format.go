package look

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/codexrelay/codexrelay/app"
	"github.com/codexrelay/codexrelay/app/ledger"
	"github.com/codexrelay/codexrelay/proxy"
)

// Human formats shared by the tray and the windows. Units are spaced ("12 s", "4 min"),
// counts get thousands separators, and nothing here reads a clock: callers pass now.

// Count formats n with thousands separators: 1284 -> "1,284".
func Count(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// Plural is "1 request", "1,284 requests".
func Plural(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return Count(n) + " " + noun + "s"
}

// Clock formats a moment as the clock time people read it at, so that a text with it stays
// the same until the moment changes: "14:36" within the next 20 hours, else "Fri 09:00".
func Clock(t, now time.Time) string {
	t = t.Local()
	if t.After(now) && t.Truncate(time.Minute).Equal(now.Local().Truncate(time.Minute)) {
		// Later this very minute: "until 18:14" read at 18:14 looks past; it is over by 18:15.
		t = t.Truncate(time.Minute).Add(time.Minute)
	}
	if d := t.Sub(now); d > -20*time.Hour && d < 20*time.Hour {
		return t.Format("15:04")
	}
	return t.Format("Mon 15:04")
}

// AccountState is an account's state as the tables and the tray say it, with the clock time
// a rest ends, and its tone: "Ready", "At 5-hour limit" (ready, but a window is used up),
// "Limit until 14:36" (the upstream's rate limit), "Kept in reserve until 14:36" (its binding
// window is down to its reserve), "Resting until 14:36" (failing: the breaker rests it),
// "Needs sign-in" or "Key rejected", "Disabled".
func AccountState(a proxy.AccountStats, now time.Time) (string, Tone) {
	switch a.State {
	case proxy.StateReady:
		if w := usedUp(a.Quota); w != "" {
			// The relay still counts it ready (the upstream has not refused it yet), but its next
			// request meets the limit: green "Ready" beside a full bar told the opposite.
			return "At " + w + " limit", Warn
		}
		return "Ready", Good
	case proxy.StateCooldown:
		what := "Resting"
		switch a.CooldownReason {
		case proxy.CooldownRateLimit:
			what = "Limit"
		case app.CooldownReserve:
			what = "Kept in reserve"
		}
		if a.CooldownUntil == nil {
			return what, Warn
		}
		return what + " until " + Clock(*a.CooldownUntil, now), Warn
	case proxy.StateNeedsLogin, proxy.StateKeyRejected:
		if a.Kind == proxy.KindOpenAI {
			return "Key rejected", Bad
		}
		return "Needs sign-in", Bad
	case proxy.StateDisabled:
		return "Disabled", Dim
	}
	return a.State, Normal
}

// BucketRests says which of an account's buckets (a model family's own limit) rest while it
// serves the other models: "GPT-5.3-Codex-Spark resting until 15:10" ("" when none).
func BucketRests(a proxy.AccountStats, now time.Time) string {
	return strings.Join(app.BucketRests(a.BucketRests, func(t time.Time) string { return Clock(t, now) }), ", ")
}

// Pace is the pool's pace at a glance (the dashboard, the tray's tooltip), from its forecast
// at now: "5-hour capacity lasts until 16:40 at this pace" when it runs out before a counted
// window resets, "5-hour capacity lasts past the 15:10 reset at this pace" when a window
// resets first (capacity comes back before it runs out); "" when the forecast says nothing
// (no pace, too few readings, used up, or read over an hour ago: ledger.Forecast.Lasts).
func Pace(f ledger.Forecast, now time.Time) string {
	until, past, ok := f.Lasts(now)
	switch {
	case !ok:
		return ""
	case past:
		return "5-hour capacity lasts past the " + Clock(f.NextReset, now) + " reset at this pace"
	}
	return "5-hour capacity lasts until " + Clock(until, now) + " at this pace"
}

// Reserve is an account's reserve: "20% in reserve" ("" when it keeps none).
func Reserve(a proxy.AccountStats) string {
	if a.Reserve <= 0 {
		return ""
	}
	return strconv.Itoa(a.Reserve) + "% in reserve"
}

// usedUp names the usage window an account has used all of ("5-hour", "weekly"; "" when
// neither, or no quota is known), the five-hour one first.
func usedUp(q *proxy.Quota) string {
	switch {
	case q == nil:
		return ""
	case q.PrimaryUsedPercent >= 100:
		return "5-hour"
	case q.SecondaryUsedPercent >= 100:
		return "weekly"
	}
	return ""
}

// UsageShort is an account's two windows in a few words: "5 h 37% · week 62%" ("" without a
// known quota); a window the account does not have is left out ("week 62%").
func UsageShort(q *proxy.Quota) string {
	switch {
	case q == nil:
		return ""
	case !q.HasPrimary():
		return fmt.Sprintf("week %.0f%%", q.SecondaryUsedPercent)
	case !q.HasSecondary():
		return fmt.Sprintf("5 h %.0f%%", q.PrimaryUsedPercent)
	}
	return fmt.Sprintf("5 h %.0f%% · week %.0f%%", q.PrimaryUsedPercent, q.SecondaryUsedPercent)
}

// ServingBadge marks the account that served the last request and the one that takes the
// next: "in use" when they are the same, "serving next", "served last", or "".
func ServingBadge(name string, snap proxy.Snapshot) string {
	last, next := name == snap.LastServed, name == snap.Next
	switch {
	case last && next:
		return "in use"
	case next:
		return "serving next"
	case last:
		return "served last"
	}
	return ""
}

// TokenCount formats a number of tokens shortly: "840", "12.4 k", "1.2 M", "50 M", "312 M",
// "1.5 B".
func TokenCount(n int64) string {
	f := float64(n)
	unit := ""
	for _, u := range []struct {
		size float64
		name string
	}{{1e9, " B"}, {1e6, " M"}, {1e3, " k"}} {
		if math.Abs(f) >= u.size {
			f /= u.size
			unit = u.name
			break
		}
	}
	switch {
	case unit == "":
		return strconv.FormatInt(n, 10)
	case math.Abs(f) < 99.95:
		return strings.TrimSuffix(strconv.FormatFloat(f, 'f', 1, 64), ".0") + unit
	}
	return strconv.FormatFloat(f, 'f', 0, 64) + unit
}

// Dollars formats an amount in US dollars: "$3.40", "$1,234.50", "<$0.01" for a few tokens'
// worth, "$0.00" for none.
func Dollars(usd float64) string {
	if usd > 0 && usd < 0.005 {
		return "<$0.01"
	}
	cents := int64(math.Round(usd * 100))
	return fmt.Sprintf("$%s.%02d", Count(cents/100), cents%100)
}

// Names lists names as a sentence does: "a", "a and b", "a, b and c".
func Names(names []string) string {
	switch len(names) {
	case 0:
		return ""
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// NextChange is how long after now what the tray and the windows show of snap changes with
// the clock alone (0: nothing will): a rest ends, a usage window resets, a banked reset comes
// within a week or a day of its expiry, or expires. They sleep until then (source.Follow).
func NextChange(snap proxy.Snapshot, now time.Time) time.Duration {
	var soonest time.Duration
	at := func(t time.Time) {
		if d := t.Sub(now); d > 0 && (soonest == 0 || d < soonest) {
			soonest = d
		}
	}
	for _, a := range snap.Accounts {
		if a.CooldownUntil != nil {
			at(*a.CooldownUntil)
		}
		for _, r := range a.BucketRests {
			at(r.Until)
		}
		if q := a.Quota; q != nil {
			at(q.PrimaryResetsAt)
			at(q.SecondaryResetsAt)
			for _, x := range q.Additional {
				at(x.PrimaryResetsAt)
				at(x.SecondaryResetsAt)
			}
		}
		if c := a.ResetCredits; c != nil && c.NextExpiresAt != nil {
			for _, before := range []time.Duration{7 * 24 * time.Hour, 24 * time.Hour, 0} {
				at(c.NextExpiresAt.Add(-before))
			}
		}
	}
	return soonest
}
