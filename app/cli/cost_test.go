package cli

import (
	"testing"

	"github.com/codexrelay/codexrelay/app/ledger"
)

// A cost no price is known for is never shown as $0.
func TestCostCellNamesUnpricedTokens(t *testing.T) {
	for _, c := range []struct {
		t    ledger.Totals
		want string
	}{
		{ledger.Totals{InputTokens: 100, OutputTokens: 10, CostUSD: 1.5}, "1.50"},
		{ledger.Totals{InputTokens: 100, OutputTokens: 10, UnpricedTokens: 110}, "unpriced"},
		{ledger.Totals{InputTokens: 100, OutputTokens: 10, CostUSD: 0.25, UnpricedTokens: 50}, "0.25+"},
		{ledger.Totals{}, "0.00"},
	} {
		if got := costCell(c.t); got != c.want {
			t.Errorf("costCell(%+v) = %q, want %q", c.t, got, c.want)
		}
	}
	if p, ok := ledger.LookupPrice("gpt-5.6-sol", nil); !ok || p.Output != 30 {
		t.Errorf("gpt-5.6-sol price %+v %v", p, ok)
	}
	if _, ok := ledger.LookupPrice("gpt-6-sol", nil); ok {
		t.Error("gpt-6-sol has a price nobody published")
	}
}
