package app

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/codexrelay/codexrelay/proxy"
)

// The command line and the accounts window read an account's extras from the same phrases: a
// metered feature's two windows, then the credits only when the account has some to speak of.
func TestQuotaExtras(t *testing.T) {
	pct := func(used float64, resets time.Time) string {
		s := fmt.Sprintf("%.0f%%", used)
		if !resets.IsZero() {
			s += " (resets)"
		}
		return s
	}
	q := &proxy.Quota{
		Additional: []proxy.AdditionalQuota{{Name: "GPT-6 Sol", PrimaryUsedPercent: 80,
			PrimaryResetsAt: time.Unix(1, 0), SecondaryUsedPercent: 12}},
		Credits: &proxy.QuotaCredits{HasCredits: true, Balance: "12.50"},
	}
	if got, want := QuotaExtras(q, pct), []string{"GPT-6 Sol 80% (resets) five-hour, 12% weekly", "credits 12.50"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	for _, c := range []struct {
		credits proxy.QuotaCredits
		want    []string
	}{
		{proxy.QuotaCredits{Unlimited: true}, []string{"credits unlimited"}},
		{proxy.QuotaCredits{HasCredits: true, Unlimited: true, Balance: "3"}, []string{"credits unlimited"}},
		{proxy.QuotaCredits{Balance: "3"}, nil},
		{proxy.QuotaCredits{HasCredits: true}, nil},
	} {
		if got := QuotaExtras(&proxy.Quota{Credits: &c.credits}, pct); !slices.Equal(got, c.want) {
			t.Errorf("credits %+v: got %q, want %q", c.credits, got, c.want)
		}
	}
	if got := QuotaExtras(nil, pct); got != nil {
		t.Errorf("no quota: %q", got)
	}
}
