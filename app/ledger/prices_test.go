package ledger

import "testing"

func TestBuiltinTableHasTheCodexModels(t *testing.T) {
	for _, m := range []string{"gpt-5", "gpt-5-codex", "gpt-5.1", "gpt-5.1-codex", "gpt-5.1-codex-mini",
		"gpt-5.1-codex-max", "gpt-5-mini", "gpt-5-nano", "gpt-4.1", "gpt-4.1-mini", "o3", "o4-mini",
		"codex-mini-latest"} {
		p, ok := builtinPrices[m]
		if !ok {
			t.Errorf("%s missing from the built-in table", m)
			continue
		}
		if p.Input <= 0 || p.Output <= 0 || p.CachedInput <= 0 || p.CachedInput > p.Input {
			t.Errorf("%s: implausible price %+v", m, p)
		}
	}
}

func TestLookupPriceFallsBackToTheBaseModel(t *testing.T) {
	gpt5 := builtinPrices["gpt-5"]
	override := Price{Input: 1, CachedInput: 0.5, Output: 2}
	cases := []struct {
		model     string
		overrides map[string]Price
		want      Price
		ok        bool
	}{
		{"gpt-5", nil, gpt5, true},
		{"gpt-5-2025-08-07", nil, gpt5, true},
		{"GPT-5", nil, gpt5, true},
		{"openai/gpt-5", nil, gpt5, true},
		{"gpt-4.1-mini-20250414", nil, builtinPrices["gpt-4.1-mini"], true},
		{"codex-mini-latest", nil, builtinPrices["codex-mini-latest"], true},
		{"gpt-5-codex-latest", nil, builtinPrices["gpt-5-codex"], true},
		{"o4-mini-2025-04-16", nil, builtinPrices["o4-mini"], true},
		{"gpt-5.1-codex-max", nil, builtinPrices["gpt-5.1-codex-max"], true},
		{"llama-3-70b", nil, Price{}, false},
		{"", nil, Price{}, false},
		{"gpt-5-2025-08", nil, Price{}, false}, // not a date suffix
		// An override wins over the table, under its own name and for dated snapshots.
		{"gpt-5-2025-08-07", map[string]Price{"gpt-5": override}, override, true},
		{"llama-3-70b", map[string]Price{"llama-3-70b": override}, override, true},
	}
	for _, c := range cases {
		got, ok := LookupPrice(c.model, normalizePrices(c.overrides))
		if got != c.want || ok != c.ok {
			t.Errorf("LookupPrice(%q) = %+v, %v; want %+v, %v", c.model, got, ok, c.want, c.ok)
		}
	}
}

func TestPriceCost(t *testing.T) {
	p := Price{Input: 1.25, CachedInput: 0.125, Output: 10}
	// 600k uncached, 400k cached, 100k output (reasoning is inside output: never added).
	if got := p.Cost(1_000_000, 400_000, 100_000); !near(got, 0.75+0.05+1.0) {
		t.Errorf("cost = %v, want 1.8", got)
	}
	// More cached than input (a malformed report) is clamped, never negative.
	if got := p.Cost(100, 500, 0); !near(got, 100*0.125/1e6) {
		t.Errorf("clamped cost = %v", got)
	}
	if got := p.Cost(-5, -1, -3); got != 0 {
		t.Errorf("negative counts cost %v", got)
	}
}

func TestNegativeOverridesAreIgnored(t *testing.T) {
	m := normalizePrices(map[string]Price{"GPT-5": {Input: -1}, "Foo/Bar": {Input: 1, Output: 2}})
	if _, ok := m["gpt-5"]; ok {
		t.Error("a negative override was kept")
	}
	if _, ok := m["bar"]; !ok {
		t.Errorf("override not normalized: %v", m)
	}
}
