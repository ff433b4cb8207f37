package look

import (
	"github.com/codexrelay/codexrelay/app/ledger"
	"github.com/codexrelay/codexrelay/proxy"
)

// Kinds are the accounts' kinds by name, as the relay's snapshot says: a ChatGPT seat's cost
// is API-equivalent (what its tokens would cost on an API key), an API key's is real. The
// tray's usage line and the Usage window split a cost by them.
type Kinds map[string]proxy.Kind

// KindsOf are the kinds of accts.
func KindsOf(accts []proxy.AccountStats) Kinds {
	k := Kinds{}
	for _, a := range accts {
		k[a.Name] = a.Kind
	}
	return k
}

// APIKey says whether account is an API key, whose cost is real. Any other (a ChatGPT seat,
// or an account no longer in the list) costs API-equivalent.
func (k Kinds) APIKey(account string) bool { return k[account] == proxy.KindOpenAI }

// Cost is a cost in its two kinds: real (API keys) and API-equivalent (the rest).
type Cost struct{ Real, Equivalent float64 }

// Split adds up groups keyed by account (a report by account) into the two kinds.
func (k Kinds) Split(groups []ledger.Group) Cost {
	var c Cost
	for _, g := range groups {
		if k.APIKey(g.Key) {
			c.Real += g.CostUSD
		} else {
			c.Equivalent += g.CostUSD
		}
	}
	return c
}
