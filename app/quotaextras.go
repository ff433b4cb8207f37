package app

import (
	"fmt"
	"time"

	"github.com/codexrelay/codexrelay/proxy"
)

// CooldownReserve is the cooldown reason of an account the relay keeps in reserve (its binding
// window has less left than its reserve), as proxy.AccountStats.CooldownReason says it.
const CooldownReserve = proxy.CooldownReserve

// StrategyResetFirst is the routing strategy that spends first the quota that resets soonest.
const StrategyResetFirst = proxy.StrategyResetFirst

// InReserve says whether the relay holds the account back for its reserve.
func InReserve(a proxy.AccountStats) bool {
	return a.State == proxy.StateCooldown && a.CooldownReason == CooldownReserve
}

// BucketRests are an account's resting buckets, a phrase each: "GPT-5.3-Codex-Spark resting
// until 15:10" (the bucket's limit named as the account's reading names it, else the bucket:
// "codex_bengalfox"), clock writing each time. `codexrelay accounts list`, `status` and the
// dashboard show them, each joined its own way.
func BucketRests(rests []proxy.BucketRest, clock func(time.Time) string) []string {
	var out []string
	for _, r := range rests {
		name := r.Name
		if name == "" {
			name = r.Bucket
		}
		out = append(out, name+" resting until "+clock(r.Until))
	}
	return out
}

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
