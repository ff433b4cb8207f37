package proxy

import "github.com/codexrelay/codexrelay/proxy/pool"

// The accounts are the pool's (proxy/pool): these names are kept so that an embedder speaks
// to the proxy alone.
type (
	Kind            = pool.Kind
	API             = pool.API
	Account         = pool.Account
	Credential      = pool.Credential
	Credentials     = pool.Credentials
	Refresher       = pool.Refresher
	Static          = pool.Static
	Breaker         = pool.Breaker
	Quota           = pool.Quota
	QuotaCredits    = pool.QuotaCredits
	AdditionalQuota = pool.AdditionalQuota

	member = pool.Member
)

const (
	KindOpenAI            = pool.KindOpenAI
	KindChatGPT           = pool.KindChatGPT
	DefaultChatGPTBaseURL = pool.DefaultChatGPTBaseURL
	APIResponses          = pool.APIResponses
	APIChat               = pool.APIChat

	StateReady       = pool.StateReady
	StateCooldown    = pool.StateCooldown
	StateNeedsLogin  = pool.StateNeedsLogin
	StateKeyRejected = pool.StateKeyRejected
	StateDisabled    = pool.StateDisabled

	CooldownRateLimit = pool.CooldownRateLimit
	CooldownFailing   = pool.CooldownFailing
	CooldownReserve   = pool.CooldownReserve

	StrategyPriority      = pool.StrategyPriority
	StrategyRoundRobin    = pool.StrategyRoundRobin
	StrategyMostQuotaLeft = pool.StrategyMostQuotaLeft
	StrategyResetFirst    = pool.StrategyResetFirst
)

var (
	// Strategies lists the routing strategies, the default first.
	Strategies                = pool.Strategies
	ErrNeedsLogin             = pool.ErrNeedsLogin
	ErrSecretStoreUnavailable = pool.ErrSecretStoreUnavailable
)

// isChatAccount reports whether m speaks Chat Completions only.
func isChatAccount(m *member) bool { return m.IsChat() }
