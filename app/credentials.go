package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/oauth2"

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
// once and then kept in memory, so a keychain that goes away later does not stop a loaded
// account; it is read again when the settings say the user replaced it (SecretRev). For
// ChatGPT sign-ins it refreshes the access token ahead of expiry and after a 401: one refresh
// at a time in every process (the token lock is held across it, and the keychain is read again
// under it, so a pair another process refreshed is adopted instead of spending its refresh
// token twice), the new pair written to the keychain before it is used, and a refresh token
// the issuer refused never sent again.
type accountCreds struct {
	app  *App
	id   string
	kind proxy.Kind

	mu      sync.Mutex
	rev     int // the SecretRev of the secret held (or to be read)
	loaded  bool
	sec     Secret
	unsaved bool   // a refreshed pair the keychain has not taken yet
	dead    string // why the sign-in is over; "" while it works
}

func (a *App) credsFor(id string) *accountCreds {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.creds[id]
}

func (c *accountCreds) loadLocked() error {
	if c.loaded {
		return nil
	}
	v, err := c.app.opt.Keychain.Get(accountUser(c.id))
	if errors.Is(err, ErrNoSecret) {
		return fmt.Errorf("%w: the keychain has no secret for this account; add it again", proxy.ErrNeedsLogin)
	}
	if err != nil {
		return err
	}
	if c.sec, err = decodeSecret(v); err != nil {
		return err
	}
	c.loaded = true
	return nil
}

// secret returns the secret held, reading it from the keychain if need be.
func (c *accountCreds) secret() (Secret, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.loadLocked(); err != nil {
		return Secret{}, err
	}
	return c.sec, nil
}

// renew forgets the secret held when the settings name a newer one (rev), so that the next
// request reads it from the keychain, and reports whether it did.
func (c *accountCreds) renew(rev int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if rev == c.rev {
		return false
	}
	c.rev, c.loaded, c.sec, c.unsaved, c.dead = rev, false, Secret{}, false, ""
	return true
}

func (c *accountCreds) credential() proxy.Credential {
	if c.kind == proxy.KindChatGPT {
		return proxy.Credential{Token: c.sec.AccessToken, AccountID: c.sec.AccountID}
	}
	return proxy.Credential{Token: c.sec.APIKey}
}

// Credential implements proxy.Credentials.
func (c *accountCreds) Credential(ctx context.Context) (proxy.Credential, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.loadLocked(); err != nil {
		return proxy.Credential{}, err
	}
	if c.kind != proxy.KindChatGPT {
		return c.credential(), nil
	}
	if err := c.usableLocked(); err != nil {
		return proxy.Credential{}, err
	}
	exp := c.sec.ExpiresAt
	if !exp.IsZero() && c.app.opt.Now().Add(refreshMargin).After(exp) && c.sec.RefreshToken != "" {
		if err := c.refreshLocked(ctx); err != nil {
			return proxy.Credential{}, err
		}
	}
	return c.credential(), nil
}

// Refresh implements proxy.Refresher: the upstream refused rejected. If another request
// refreshed in the meantime, the newer token is returned without a second refresh.
func (c *accountCreds) Refresh(ctx context.Context, rejected proxy.Credential) (proxy.Credential, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.loadLocked(); err != nil {
		return proxy.Credential{}, err
	}
	if c.kind != proxy.KindChatGPT {
		return proxy.Credential{}, fmt.Errorf("%w: the API key was refused", proxy.ErrNeedsLogin)
	}
	if err := c.usableLocked(); err != nil {
		return proxy.Credential{}, err
	}
	if c.sec.AccessToken != rejected.Token {
		return c.credential(), nil
	}
	if err := c.refreshLocked(ctx); err != nil {
		return proxy.Credential{}, err
	}
	return c.credential(), nil
}

// usableLocked refuses a dead sign-in and makes sure a refreshed pair is in the keychain before
// it is used.
func (c *accountCreds) usableLocked() error {
	if c.dead != "" {
		return fmt.Errorf("%w: %s", proxy.ErrNeedsLogin, c.dead)
	}
	if c.unsaved {
		if err := c.app.opt.Keychain.Set(accountUser(c.id), c.sec.encode()); err != nil {
			return fmt.Errorf("the refreshed sign-in is kept in memory but could not be saved to the keychain, so it is not used yet: %w", err)
		}
		c.unsaved = false
	}
	return nil
}

// refreshLocked trades the refresh token for a new pair, under the token lock that every Codex
// Relay process takes for this. It first reads the keychain again: when another process
// refreshed meanwhile, its pair is adopted, and refreshed again only if it is itself about to
// expire. It runs on a context detached from the request: a client that goes away must not
// abort a refresh whose answer would carry the only valid refresh token.
func (c *accountCreds) refreshLocked(ctx context.Context) error {
	unlock, err := lockFile(filepath.Join(c.app.opt.ConfigDir, tokensLockName), 45*time.Second)
	if err != nil {
		return err
	}
	defer unlock()
	if !c.unsaved {
		if v, err := c.app.opt.Keychain.Get(accountUser(c.id)); err == nil {
			if stored, err := decodeSecret(v); err == nil && stored.AccessToken != "" && stored.AccessToken != c.sec.AccessToken {
				c.sec, c.dead = stored, ""
				c.app.log.Info("adopted the sign-in another process refreshed", "account_id", c.id)
				if exp := stored.ExpiresAt; exp.IsZero() || c.app.opt.Now().Add(refreshMargin).Before(exp) {
					return nil
				}
			}
		}
	}
	rt := c.sec.RefreshToken
	if rt == "" {
		c.dead = "the sign-in has expired and has no refresh token; sign in again"
		return fmt.Errorf("%w: %s", proxy.ErrNeedsLogin, c.dead)
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	cfg := c.app.oauthConfig("")
	tok, err := cfg.TokenSource(c.app.oauthContext(rctx), &oauth2.Token{RefreshToken: rt, Expiry: time.Unix(1, 0)}).Token()
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && re.Response != nil && re.Response.StatusCode >= 400 && re.Response.StatusCode < 500 &&
			re.Response.StatusCode != http.StatusTooManyRequests {
			// The issuer refused the refresh token: it is spent or revoked. Never send it again.
			c.sec.RefreshToken = ""
			c.dead = "the token refresh was refused (" + oauthError(err).Error() + "); sign in again"
			c.app.log.Warn("token refresh refused: the account needs a new sign-in", "account_id", c.id)
			return fmt.Errorf("%w: %s", proxy.ErrNeedsLogin, c.dead)
		}
		return fmt.Errorf("token refresh failed: %v", oauthError(err))
	}
	c.sec = secretFromToken(tok, c.sec)
	c.unsaved = true
	c.app.log.Info("access token refreshed", "account_id", c.id, "expires", c.sec.ExpiresAt)
	return c.usableLocked()
}
