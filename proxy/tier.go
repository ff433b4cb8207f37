package proxy

import (
	"bytes"

	"github.com/codexrelay/codexrelay/proxy/payload"
)

// Service tiers. A Responses or Chat Completions body may name the processing tier it wants
// in service_tier: Codex's Fast mode sends "priority" (older builds "fast", which the OpenAI API
// also takes and answers as priority), the API also takes "default", "flex", "auto", "scale"
// and "ultrafast". The relay reads the tier when it reads the
// request's other routing fields (clientFields: one look-up among the members the parse
// already split, no pass of its own), the trace and the ledger record it, and each account is
// sent only a tier its backend serves: the ChatGPT backend answers 400 to flex, auto and scale,
// so a ChatGPT account gets the body without service_tier and serves the request at its
// default tier. What the client sent is never changed; the trace says when the tier was left
// out (serviceTierOmitted).

// The tiers the relay knows by name (Trace.ServiceTier holds one of them, or what else the
// client named).
const (
	TierDefault  = "default"
	TierPriority = "priority"
	TierFlex     = "flex"
	TierAuto     = "auto"
	TierScale    = "scale"
	// TierUltrafast is an access-controlled tier of a few API models (the OpenAI SDK's docs).
	TierUltrafast = "ultrafast"
)

// knownTiers maps a service_tier value as it arrives (raw JSON, quotes included) to the tier
// recorded: an exact match costs a comparison and no allocation. "fast" is the name older
// Codex builds gave priority.
var knownTiers = []struct {
	raw  []byte
	tier string
}{
	{[]byte(`"priority"`), TierPriority},
	{[]byte(`"default"`), TierDefault},
	{[]byte(`"fast"`), TierPriority},
	{[]byte(`"flex"`), TierFlex},
	{[]byte(`"auto"`), TierAuto},
	{[]byte(`"scale"`), TierScale},
	{[]byte(`"ultrafast"`), TierUltrafast},
}

// maxTierName bounds the tier recorded for a value the relay does not know (real tiers are a
// word); the value itself goes upstream as it came.
const maxTierName = 32

// requestedTier is the tier a body's service_tier value (raw JSON) asks for: one of the known
// tiers, "priority" for "fast", "" when the member is absent, null or not a string (the
// upstream's business: it goes as it came). A string the relay does not know is recorded as it
// reads, cut to maxTierName bytes.
func requestedTier(raw []byte, present bool) string {
	if !present || payload.KindOf(raw) != payload.KindString {
		return ""
	}
	for _, k := range knownTiers {
		if bytes.Equal(raw, k.raw) {
			return k.tier
		}
	}
	s, err := payload.DecodeString(raw)
	if err != nil {
		return ""
	}
	if s == "fast" {
		return TierPriority // written with escapes
	}
	return truncateUTF8(s, maxTierName)
}

// servesTier reports whether an account of kind k can be sent service_tier tier. The ChatGPT
// backend refuses flex, auto and scale with 400 (and echoes "default" for the rest); priority
// is Codex's Fast mode there and goes. An OpenAI-compatible account gets whatever the client
// asked for: its upstream decides.
func servesTier(k Kind, tier string) bool {
	if k != KindChatGPT {
		return true
	}
	switch tier {
	case TierFlex, TierAuto, TierScale:
		return false
	}
	return true
}

// omitTier is the override that leaves service_tier out of a body.
var omitTier = payload.Override{Key: "service_tier"}

// tierFor is the service_tier override for account m's body: the member left out when m's
// backend does not serve the tier the client asked for, else none. The override is the same
// for every account it applies to, so that they share one body in the serialization cache.
// It records in the trace whether the attempt being built (the last one built is the serving
// account's) left the tier out.
func (x *exchange) tierFor(m *member) (payload.Override, bool) {
	omit := x.req.tier != "" && !servesTier(m.Kind, x.req.tier)
	x.t.ServiceTierOmitted = omit
	return omitTier, omit
}

// truncateUTF8 cuts s to at most n bytes without splitting a character.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
