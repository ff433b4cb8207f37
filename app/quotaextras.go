package app

import (
	"fmt"
	"time"

	"github.com/codexrelay/codexrelay/proxy"
)

// QuotaExtras are what a ChatGPT account's usage carries beside its two windows, a phrase
// each: the limits of metered features (a model family's own windows: "GPT-6 Sol 80%
// five-hour, 12% weekly", pct writing each window's use and when it resets) and the credits
// balance ("credits 12.50", "credits unlimited"); none for q nil. `codexrelay accounts` and the
// accounts window show them, each joined its own way.
func QuotaExtras(q *proxy.Quota, pct func(used float64, resets time.Time) string) []string {
	if q == nil {
		return nil
	}
	var parts []string
	for _, a := range q.Additional {
		parts = append(parts, fmt.Sprintf("%s %s five-hour, %s weekly", a.Name,
			pct(a.PrimaryUsedPercent, a.PrimaryResetsAt), pct(a.SecondaryUsedPercent, a.SecondaryResetsAt)))
	}
	if c := q.Credits; c != nil {
		switch {
		case c.Unlimited:
			parts = append(parts, "credits unlimited")
		case c.HasCredits && c.Balance != "":
			parts = append(parts, "credits "+c.Balance)
		}
	}
	return parts
}
