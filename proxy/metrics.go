package proxy

import (
	"fmt"
	"net/http"
	"strings"
)

// handleMetrics serves the live counters in the Prometheus text format.
func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request) {
	snap := s.Stats()
	var b strings.Builder
	described := map[string]bool{}
	metric := func(name, typ, help string, value any, labels ...string) {
		if !described[name] { // HELP and TYPE once, before a metric's first sample
			described[name] = true
			fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
		}
		l := ""
		if len(labels) > 0 {
			l = "{" + strings.Join(labels, ",") + "}"
		}
		fmt.Fprintf(&b, "%s%s %v\n", name, l, value)
	}
	metric("codexrelay_requests_total", "counter", "Client requests received.", snap.Requests.Total)
	metric("codexrelay_request_errors_total", "counter", "Client requests that ended in an error.", snap.Requests.Errors)
	metric("codexrelay_rotations_total", "counter", "Moves of a request to the next account.", snap.Requests.Rotations)
	metric("codexrelay_requests_in_flight", "gauge", "Client requests being served.", snap.Requests.InFlight)
	metric("codexrelay_websockets_open", "gauge", "Client WebSocket connections open.", snap.Requests.WebSockets)
	metric("codexrelay_requests_held", "gauge", "Client requests waiting for a resting pool.", snap.Requests.Held)
	metric("codexrelay_sealed_omitted_total", "counter", "Items sealed by another account left out of what an account received.", snap.Requests.SealedOmitted)
	metric("codexrelay_tier_omitted_total", "counter", "Requests whose service tier was left out of what the serving account received.", snap.Requests.TierOmitted)
	metric("codexrelay_sealed_retries_total", "counter", "Requests retried without sealed content an account refused.", snap.Requests.SealedRetries)
	metric("codexrelay_serialization_total", "counter", "Upstream body builds by path.", snap.Serialization.Hits, `result="hit"`)
	metric("codexrelay_serialization_total", "counter", "", snap.Serialization.Misses, `result="miss"`)
	metric("codexrelay_serialization_total", "counter", "", snap.Serialization.Direct, `result="direct"`)
	metric("codexrelay_catalog_age_ms", "gauge", "Age of the model catalog in milliseconds (-1: none yet).", snap.Catalog.AgeMs)
	metric("codexrelay_catalog_models", "gauge", "Models in the catalog.", snap.Catalog.Models)
	metric("codexrelay_catalog_refresh_total", "counter", "Catalog refreshes seen by requests, by mode.", snap.Catalog.Refresh.Background, `mode="background"`)
	metric("codexrelay_catalog_refresh_total", "counter", "", snap.Catalog.Refresh.Blocking, `mode="blocking"`)
	metric("codexrelay_catalog_refresh_total", "counter", "", snap.Catalog.Refresh.Shared, `mode="shared"`)
	for _, a := range snap.Accounts {
		name := `account="` + escapeLabel(a.Name) + `"`
		metric("codexrelay_account_requests_total", "counter", "Upstream attempts per account.", a.Requests, name)
		for _, st := range []string{StateReady, StateCooldown, StateNeedsLogin, StateKeyRejected, StateDisabled} {
			v := 0
			if a.State == st {
				v = 1
			}
			metric("codexrelay_account_state", "gauge", "Account state (1 for the current one).", v, name, `state="`+st+`"`)
		}
	}
	s.tokens.each(func(account, model string, u Usage) {
		l := []string{`account="` + escapeLabel(account) + `"`, `model="` + escapeLabel(model) + `"`}
		for _, k := range []struct {
			kind string
			n    int64
		}{{"input", u.InputTokens}, {"cached", u.CachedTokens}, {"output", u.OutputTokens}, {"reasoning", u.ReasoningTokens}} {
			metric("codexrelay_tokens_total", "counter", "Tokens the upstreams reported, by account, served model and kind (cached is part of input, reasoning part of output).",
				k.n, append(l, `kind="`+k.kind+`"`)...)
		}
	})
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	w.Write([]byte(b.String()))
}

func escapeLabel(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}
