package ledger

import (
	"strings"
)

// PricesCheckedAt is the date the built-in price table was last compared with the public API
// price list. Every cost the ledger reports is labelled with it (Report.PricesCheckedAt).
const PricesCheckedAt = "2026-12-01"

// Price is what one model costs on the API, in US dollars per million tokens.
//
// Cached input tokens are part of input tokens and output tokens include reasoning tokens, as
// the upstream's usage reports them, so a request costs
//
//	((input - cached) * Input + cached * CachedInput + output * Output) / 1e6
//
// and reasoning tokens are never added a second time.
type Price struct {
	Input       float64 `json:"input"`
	CachedInput float64 `json:"cached_input"`
	Output      float64 `json:"output"`
}

// Cost is the dollar cost of the given token counts at p. cached is clamped to input, so a
// malformed usage report cannot produce a negative cost.
func (p Price) Cost(input, cached, output int64) float64 {
	input, cached, output = max(input, 0), max(cached, 0), max(output, 0)
	cached = min(cached, input)
	return (float64(input-cached)*p.Input + float64(cached)*p.CachedInput + float64(output)*p.Output) / 1e6
}

// builtinPrices are the public API list prices (standard tier, not batch or priority) as of
// PricesCheckedAt, in USD per million tokens. TO BE RE-CHECKED whenever models are added to the
// catalog or the price page changes: bump PricesCheckedAt with the figures. Users override
// single entries in their settings (Options.Prices); a ChatGPT seat's cost is the
// API-equivalent cost of the same tokens.
//
// GPT-5.6 (Sol, Terra, Luna): OpenAI's list prices as published with the family's preview on
// 2026-06-26 (input and output per million tokens; reported the same by every price write-up
// checked on 2026-12-01). The cached-input price was not published with them: it is taken at a
// tenth of the input price, as for every GPT-5 model above. The GPT-6 models Codex 0.171 lists
// have no published API price: they are unpriced (shown as such, never as $0) until one is.
var builtinPrices = map[string]Price{
	"gpt-5.6-sol":        {Input: 5.00, CachedInput: 0.50, Output: 30.00},
	"gpt-5.6-terra":      {Input: 2.50, CachedInput: 0.25, Output: 15.00},
	"gpt-5.6-luna":       {Input: 1.00, CachedInput: 0.10, Output: 6.00},
	"gpt-5.5":            {Input: 5.00, CachedInput: 0.50, Output: 30.00},
	"gpt-5.4":            {Input: 2.50, CachedInput: 0.25, Output: 15.00},
	"gpt-5.4-mini":       {Input: 0.75, CachedInput: 0.075, Output: 4.50},
	"gpt-5.3-codex":      {Input: 1.75, CachedInput: 0.175, Output: 14.00},
	"gpt-5.2":            {Input: 1.75, CachedInput: 0.175, Output: 14.00},
	"gpt-5.2-codex":      {Input: 1.75, CachedInput: 0.175, Output: 14.00},
	"gpt-5.1":            {Input: 1.25, CachedInput: 0.125, Output: 10.00},
	"gpt-5.1-codex":      {Input: 1.25, CachedInput: 0.125, Output: 10.00},
	"gpt-5.1-codex-max":  {Input: 1.25, CachedInput: 0.125, Output: 10.00},
	"gpt-5.1-codex-mini": {Input: 0.25, CachedInput: 0.025, Output: 2.00},
	"gpt-5":              {Input: 1.25, CachedInput: 0.125, Output: 10.00},
	"gpt-5-codex":        {Input: 1.25, CachedInput: 0.125, Output: 10.00},
	"gpt-5-mini":         {Input: 0.25, CachedInput: 0.025, Output: 2.00},
	"gpt-5-nano":         {Input: 0.05, CachedInput: 0.005, Output: 0.40},
	"gpt-4.1":            {Input: 2.00, CachedInput: 0.50, Output: 8.00},
	"gpt-4.1-mini":       {Input: 0.40, CachedInput: 0.10, Output: 1.60},
	"gpt-4.1-nano":       {Input: 0.10, CachedInput: 0.025, Output: 0.40},
	"gpt-4o":             {Input: 2.50, CachedInput: 1.25, Output: 10.00},
	"gpt-4o-mini":        {Input: 0.15, CachedInput: 0.075, Output: 0.60},
	"o3":                 {Input: 2.00, CachedInput: 0.50, Output: 8.00},
	"o4-mini":            {Input: 1.10, CachedInput: 0.275, Output: 4.40},
	"codex-mini-latest":  {Input: 1.50, CachedInput: 0.375, Output: 6.00},
}

// tierMultipliers are what a request costs at a service tier other than the standard one, as a
// multiple of the standard list prices above, as of PricesCheckedAt. A tier without a row
// (default, auto, or one the account was not sent) costs the standard price.
//
// Priority: OpenAI's price list (https://openai.com/api/pricing/, its "Priority" column, and
// https://platform.openai.com/docs/guides/priority-processing) lists priority processing at
// about twice the standard price for the models it covers: exactly 2x for the large GPT-5
// models Codex uses (gpt-5: $2.50 / $0.25 cached / $20.00 per million against $1.25 / $0.125
// / $10.00), a little less (about 1.7-1.8x) for smaller and older ones such as gpt-5-mini,
// gpt-4.1, gpt-4o and o3, which one multiple therefore slightly over-counts. On
// a ChatGPT seat, priority (Codex's Fast mode) costs no dollars but fills the plan's windows
// faster; its figure is, like the rest of a seat's, the API-equivalent estimate.
//
// Flex (about half price on the API) has no row: a flex request is counted at the standard
// price, an over-estimate, since a ChatGPT account is never sent flex.
var tierMultipliers = map[string]float64{
	TierPriority: 2,
}

// TierMultipliers returns a copy of the service-tier table (tier -> multiple of the standard
// price), for a report or a settings page to show.
func TierMultipliers() map[string]float64 {
	m := make(map[string]float64, len(tierMultipliers))
	for k, v := range tierMultipliers {
		m[k] = v
	}
	return m
}

// TierMultiplier is the multiple of the standard price a request sent at tier costs (1 for
// a tier without a row).
func TierMultiplier(tier string) float64 {
	if m, ok := tierMultipliers[tier]; ok {
		return m
	}
	return 1
}

// BuiltinPrices returns a copy of the built-in table, by model, for a settings page to show.
func BuiltinPrices() map[string]Price {
	m := make(map[string]Price, len(builtinPrices))
	for k, v := range builtinPrices {
		m[k] = v
	}
	return m
}

// LookupPrice finds the price of model: first in overrides, then in the built-in table, each
// time under the name as given (case-insensitive, any "provider/" prefix dropped) and then under
// its base name (a date suffix such as "-2025-08-07" or "-20250807", or a "-latest", removed).
// ok is false for a model neither table knows; its cost is then reported as 0 and the model
// listed in Report.UnpricedModels.
func LookupPrice(model string, overrides map[string]Price) (p Price, ok bool) {
	name := normalizeModel(model)
	if name == "" {
		return Price{}, false
	}
	for _, n := range []string{name, baseModel(name)} {
		if p, ok := overrides[n]; ok {
			return p, true
		}
		if p, ok := builtinPrices[n]; ok {
			return p, true
		}
	}
	return Price{}, false
}

// normalizeModel lowercases a model name and drops a "provider/" prefix.
func normalizeModel(model string) string {
	name := strings.ToLower(strings.TrimSpace(model))
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	return name
}

// baseModel removes one date suffix ("-YYYY-MM-DD" or "-YYYYMMDD") or a "-latest" from a
// normalized name; the name itself when it has neither.
func baseModel(name string) string {
	if b, ok := strings.CutSuffix(name, "-latest"); ok && b != "" {
		return b
	}
	digitsAt := func(s string, dashes ...int) bool {
		for i := 0; i < len(s); i++ {
			dash := false
			for _, d := range dashes {
				if i == d {
					dash = true
				}
			}
			if dash != (s[i] == '-') || (!dash && (s[i] < '0' || s[i] > '9')) {
				return false
			}
		}
		return true
	}
	if n := len(name); n > 11 && name[n-11] == '-' && digitsAt(name[n-10:], 4, 7) {
		return name[:n-11]
	}
	if n := len(name); n > 9 && name[n-9] == '-' && digitsAt(name[n-8:]) {
		return name[:n-9]
	}
	return name
}

// normalizePrices copies user overrides under normalized names; entries with a negative
// figure are dropped (a typo in settings must not produce negative costs).
func normalizePrices(in map[string]Price) map[string]Price {
	out := make(map[string]Price, len(in))
	for k, v := range in {
		if v.Input < 0 || v.CachedInput < 0 || v.Output < 0 {
			continue
		}
		if n := normalizeModel(k); n != "" {
			out[n] = v
		}
	}
	return out
}
