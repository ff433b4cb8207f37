package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/codexrelay/codexrelay/proxy"
)

// Secret is what the keychain holds for one account, as one JSON document.
type Secret struct {
	APIKey       string    `json:"api_key,omitempty"`
	AccessToken  string    `json:"access_token,omitempty"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	IDToken      string    `json:"id_token,omitempty"`
	AccountID    string    `json:"account_id,omitempty"`
	ExpiresAt    time.Time `json:"expires_at,omitzero"`
}

func (s Secret) encode() string {
	b, _ := json.Marshal(s)
	return string(b)
}

func decodeSecret(v string) (Secret, error) {
	var s Secret
	if err := json.Unmarshal([]byte(v), &s); err != nil {
		return s, errors.New("the keychain entry is not a Codex Relay secret")
	}
	return s, nil
}

// accountCreds hands the proxy an account's credential. The secret is read from the keychain
// once and then kept in memory, so a keychain that goes away later does not stop a loaded account.
type accountCreds struct {
	keys Keychain
	id   string
	kind proxy.Kind

	mu     sync.Mutex
	loaded bool
	sec    Secret
}

// Credential implements proxy.Credentials.
func (c *accountCreds) Credential(ctx context.Context) (proxy.Credential, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.loaded {
		v, err := c.keys.Get(accountUser(c.id))
		if errors.Is(err, ErrNoSecret) {
			return proxy.Credential{}, fmt.Errorf("%w: the keychain has no secret for this account; add it again", proxy.ErrNeedsLogin)
		}
		if err != nil {
			return proxy.Credential{}, err
		}
		if c.sec, err = decodeSecret(v); err != nil {
			return proxy.Credential{}, err
		}
		c.loaded = true
	}
	if c.kind == proxy.KindChatGPT {
		return proxy.Credential{Token: c.sec.AccessToken, AccountID: c.sec.AccountID}, nil
	}
	return proxy.Credential{Token: c.sec.APIKey}, nil
}
