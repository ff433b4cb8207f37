package window

import (
	"errors"
	"strconv"
	"time"

	"fyne.io/fyne/v2"

	"github.com/codexrelay/codexrelay/proxy"
	"github.com/codexrelay/codexrelay/ui/look"
)

// Banked resets in the windows: what an account holds (the dashboard's Banked resets column,
// the accounts window's detail) and Redeem in the accounts window's row menu (ui/tray's
// credits.go has the tray's side).

// creditsCell is an account's banked resets in the dashboard's Banked resets column: "2 ·
// expires 14:00", "none", or "–" (an API key, or not read yet).
func creditsCell(a proxy.AccountStats, now time.Time) textView {
	c := a.ResetCredits
	switch {
	case c == nil:
		return textView{"–", look.Dim}
	case c.Available <= 0:
		return textView{"none", look.Dim}
	}
	s := strconv.Itoa(c.Available)
	if c.NextExpiresAt != nil && c.NextExpiresAt.Sub(now) < 7*24*time.Hour {
		s += " · expires " + look.Clock(*c.NextExpiresAt, now)
	}
	return textView{text: s}
}

// creditsDetail is the longer form, for the accounts window: "2 banked resets (the next
// expires Mon 09:00)".
func creditsDetail(c *proxy.ResetCredits, now time.Time) string {
	if c == nil || c.Available <= 0 {
		return ""
	}
	s := look.Plural(int64(c.Available), "banked reset")
	if c.NextExpiresAt != nil {
		s += " (the next expires " + look.Clock(*c.NextExpiresAt, now) + ")"
	}
	if c.Pending {
		s += "; a redemption awaits its answer"
	}
	return s
}

// joinNonEmpty joins the parts that are not "".
func joinNonEmpty(sep string, parts ...string) string {
	out := ""
	for _, p := range parts {
		if p == "" {
			continue
		}
		if out != "" {
			out += sep
		}
		out += p
	}
	return out
}

// redeem spends a banked reset of the named account, off the UI thread (the relay process
// does it: the request travels there).
func (a *accountsWindow) redeem(name string) {
	a.u.async(func() {
		res, err := a.u.redeem(name)
		fyne.Do(func() {
			if err != nil {
				a.fail(errors.New(look.RedeemFailure(name, err)))
				return
			}
			a.done(look.Redeemed(res))
		})
	})
}
