package pool

import (
	"context"
	"errors"
)

// Kind is the kind of an upstream account.
type Kind string

const (
	// KindOpenAI is an OpenAI-compatible API with an API key ({base}/responses, {base}/chat/completions, {base}/models).
	KindOpenAI Kind = "openai"
	// KindChatGPT is a ChatGPT/Codex sign-in talking to the Codex backend (always streamed, store:false).
	KindChatGPT Kind = "chatgpt"
)

// DefaultChatGPTBaseURL is where ChatGPT accounts send Responses requests by default.
const DefaultChatGPTBaseURL = "https://chatgpt.com/backend-api/codex"

// API is the wire protocol an account speaks.
type API string

const (
	APIResponses API = "responses"
	APIChat      API = "chat"
)

// Account is one upstream account as the proxy sees it. The proxy never stores or logs the
// secret: it asks Credentials for it on each attempt.
type Account struct {
	// ID identifies the account across Set (SetAccounts), so that its runtime state (cooldown,
	// counters, quota) survives a rename (default: Name).
	ID      string
	Name    string
	Kind    Kind
	BaseURL string // without a trailing slash, e.g. https://api.openai.com/v1
	API     API    // APIResponses (default) or APIChat
	// Priority groups accounts: lower values are tried first; accounts of equal priority are
	// taken in list order ("priority" strategy) or in turn ("round-robin").
	Priority int
	// Reserve is the share of its binding window (percent, 0-99) the relay leaves unspent: an
	// account shared with its owner or a colleague is not chosen once its window has less left
	// (0: none kept).
	Reserve     int
	Disabled    bool
	Credentials Credentials
}

// Credential is what an attempt needs to authenticate upstream.
type Credential struct {
	Token     string // API key or OAuth access token, sent as a bearer token
	AccountID string // ChatGPT account id (chatgpt-account-id header); empty for API keys
}

// Credentials hands out an account's current credential. Implementations may refresh tokens;
// they must be safe for concurrent use.
type Credentials interface {
	Credential(ctx context.Context) (Credential, error)
}

// Refresher is implemented by Credentials that can renew a credential the upstream rejected
// (HTTP 401). Refresh is given the rejected credential so that concurrent callers share one
// refresh; it returns the credential to retry with.
type Refresher interface {
	Refresh(ctx context.Context, rejected Credential) (Credential, error)
}

// Static is a fixed credential, for API keys.
type Static Credential

// Credential returns c.
func (c Static) Credential(context.Context) (Credential, error) { return Credential(c), nil }

// ErrNeedsLogin is returned (wrapped) by Credentials whose sign-in must be renewed by the user.
var ErrNeedsLogin = errors.New("needs sign-in")

// ErrSecretStoreUnavailable is matched (errors.Is) by Credentials errors that mean the place
// secrets are kept (the system keychain) cannot be read: not the account's fault, and nothing
// an upstream can fix. A request that no account could take for that reason gets 503
// keychain_unavailable with the error's advice.
var ErrSecretStoreUnavailable = errors.New("the secret store is unavailable")

// IsChat reports whether the account speaks Chat Completions only.
func (a *Account) IsChat() bool { return a.Kind == KindOpenAI && a.API == APIChat }

// Key identifies an account across Set: its ID, else its name.
func (a *Account) Key() string {
	if a.ID != "" {
		return a.ID
	}
	return a.Name
}
