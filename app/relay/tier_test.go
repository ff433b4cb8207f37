package relay

import (
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/codexrelay/codexrelay/app/ledger"
	"github.com/codexrelay/codexrelay/app/localapi"
	"github.com/codexrelay/codexrelay/proxy"
)

// A trace's service tier becomes its ledger row's, and /relay/usage groups by it with priority
// at its multiple.
func TestUsageByServiceTier(t *testing.T) {
	at := time.Now().Add(-time.Hour).UTC()
	traces := []proxy.Trace{
		{Time: at, Account: "seat", Model: "gpt-5", ResolvedModel: "gpt-5", Status: 200, Outcome: "completed",
			ServiceTier: "priority", Usage: &proxy.Usage{InputTokens: 1_000_000, OutputTokens: 100_000}},
		{Time: at, Account: "seat", Model: "gpt-5", ResolvedModel: "gpt-5", Status: 200, Outcome: "completed",
			ServiceTier: "flex", ServiceTierOmitted: true, Usage: &proxy.Usage{InputTokens: 1_000_000, OutputTokens: 100_000}},
	}
	if r := LedgerRow(traces[1]); r.ServiceTier != "flex" || !r.ServiceTierOmitted {
		t.Fatalf("row %+v", r)
	}
	l, err := ledger.Open(ledger.Options{Path: filepath.Join(t.TempDir(), "usage.db"), FlushEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, tr := range traces {
		l.Record(LedgerRow(tr))
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	usage := localapi.Handler(localapi.Backend{Usage: func() localapi.Usage { return l }})
	usage.ServeHTTP(w, httptest.NewRequest("GET", "/relay/usage?since=1d&by=tier", nil))
	var rep ledger.Report
	if err := json.Unmarshal(w.Body.Bytes(), &rep); err != nil || w.Code != 200 {
		t.Fatalf("/relay/usage?by=tier: %d %s", w.Code, w.Body)
	}
	// gpt-5: 1M input at $1.25 and 100k output at $10 = $2.25; priority doubles it.
	costs := map[string]float64{}
	for _, g := range rep.Groups {
		costs[g.Key] = g.CostUSD
	}
	if len(costs) != 2 || costs["priority"] != 4.5 || costs["flex"] != 2.25 || rep.TierMultipliers["priority"] != 2 {
		t.Errorf("by tier: %v, multipliers %v", costs, rep.TierMultipliers)
	}
}
