package window

import (
	"strings"
	"testing"

	"github.com/codexrelay/codexrelay/app/ledger"
	"github.com/codexrelay/codexrelay/ui/source"
	"github.com/codexrelay/codexrelay/ui/uitest"
)

// tieredUsage is sampleUsage with service tiers: personal's Fast-mode turns (priority, priced
// at twice the standard price) and the API key's flex batch beside requests that asked for
// no tier.
func tieredUsage() *source.FixedUsage {
	f := uitest.SampleUsage()
	f.Rows[0].Tier = "priority" // personal today, 840 k tokens, $2.10 (already at 2x)
	f.Rows[1].Tier = "flex"     // api today, 360 k tokens, $1.30
	f.Rows[2].Tier = "priority" // personal yesterday, 2.1 M tokens, $4.00
	return f
}

// The Usage window lists the tiers asked for, by tokens: priority as Codex users know it
// (Fast), no tier as the standard one, each with its tokens and cost, and says that priority
// is priced at its multiple and that a seat's figure is API-equivalent.
func TestUsageWindowShowsServiceTiers(t *testing.T) {
	u, _ := newUsageUI(t, tieredUsage())
	u.ShowUsage()
	w := u.usageWin
	c := w.win.Content()
	mustShow(t, c, "Service tiers", "priority (Fast)", "standard", "flex",
		"2.9 M", "$6.10", // priority: 840 k + 2.1 M tokens, $2.10 + $4.00
		"1.5 M", "$4.00", // standard: team's 1.05 M and 420 k, $3.00 + $1.00
		"360 k", "$1.30", // flex
	)
	if got := strings.Join(w.tiers.names(), ","); got != "priority (Fast),standard,flex" {
		t.Errorf("tiers %q, want by tokens", got)
	}
	mustShow(t, c, "priority at 2× · a seat's API-equivalent")

	// The view alone: no tier asked for at all is one standard line, priced as it is.
	v := newUsageView(readUsage(uitest.SampleUsage(), uitest.Sample().Snapshot.Accounts, 7, uitest.Now))
	if len(v.tiers) != 1 || v.tiers[0].name != "standard" || v.tiers[0].cost != "$11.40" {
		t.Errorf("tiers without any asked for: %+v", v.tiers)
	}
	// Without a ChatGPT seat in the pool the note does not speak of seats.
	if note := tiersNote(ledger.Report{TierMultipliers: ledger.TierMultipliers()}, kindsOf(nil)); note != "priority at 2×" {
		t.Errorf("note without seats %q", note)
	}
}

// With the tiers table the window still shows everything at 800x600 without scrolling, over
// 30 days.
func TestUsageWindowFitsWithTiers(t *testing.T) {
	u, _ := newUsageUI(t, tieredUsage())
	u.ShowUsagePeriod(30)
	w := u.usageWin
	fitsWithoutScrolling(t, w)
	if w.costChart.Size().Width < 200 {
		t.Errorf("the cost chart is squeezed to %.0f px", w.costChart.Size().Width)
	}
	mustShow(t, w.win.Content(), "Cache hit") // the models and projects keep their cache hits
}
