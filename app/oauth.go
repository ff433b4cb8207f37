package app

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/codexrelay/codexrelay/proxy"
)

// The Codex CLI's public OAuth client (its issuer, client ID and PKCE flow). Sign-ins made here are the same kind
// of sign-in as the CLI's own.
const (
	DefaultAuthIssuer = "https://auth.openai.com"
	CodexClientID     = "app_EMoamEEZ73f0CkXaXp7hrann"
	// DefaultCallbackAddr is where the browser sign-in returns; the Codex CLI uses it too.
	DefaultCallbackAddr = "127.0.0.1:1455"
	signInTimeout       = 15 * time.Minute
	refreshMargin       = 5 * time.Minute
)

var oauthScopes = []string{"openid", "profile", "email", "offline_access"}

func (a *App) issuer() string {
	if v := a.opt.Getenv("CODEXRELAY_AUTH_ISSUER"); v != "" {
		return strings.TrimRight(v, "/")
	}
	return DefaultAuthIssuer
}

func (a *App) oauthConfig(redirect string) *oauth2.Config {
	iss := a.issuer()
	return &oauth2.Config{
		ClientID:    CodexClientID,
		Endpoint:    oauth2.Endpoint{AuthURL: iss + "/oauth/authorize", TokenURL: iss + "/oauth/token", AuthStyle: oauth2.AuthStyleInParams},
		RedirectURL: redirect,
		Scopes:      oauthScopes,
	}
}

// oauthContext makes x/oauth2 use the app's sign-in client.
func (a *App) oauthContext(ctx context.Context) context.Context {
	return context.WithValue(ctx, oauth2.HTTPClient, a.signInClient())
}

// signInClient sends the sign-in and token refresh requests (through the app's transport,
// which tests may set) with the identity the relay's other upstream calls carry: the Codex
// CLI's originator and user agent.
func (a *App) signInClient() *http.Client {
	base := a.opt.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	a.mu.Lock()
	ua, of := a.userAgent, a.userAgentOf
	a.mu.Unlock()
	if of != nil {
		ua = of()
	}
	return &http.Client{Timeout: 30 * time.Second, Transport: identity{base, ua}}
}

// UserAgentFrom has the sign-in and the token refresh send the user agent f gives: the running
// relay's (app/relay gives its proxy's, which follows the version a client raised it to), so
// that they carry the identity of the relay's other upstream calls.
func (a *App) UserAgentFrom(f func() string) {
	a.mu.Lock()
	a.userAgentOf = f
	a.mu.Unlock()
}

type identity struct {
	base http.RoundTripper
	ua   string
}

func (t identity) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("User-Agent", t.ua)
	r.Header.Set("originator", proxy.Originator)
	return t.base.RoundTrip(r)
}

// SignInChatGPT signs in with ChatGPT in the browser (authorization code with PKCE S256, the
// callback on the loopback port 1455 as the Codex CLI does) and adds the account, or renews
// the sign-in of the account with the same ChatGPT account id. name "" uses the email.
func (a *App) SignInChatGPT(ctx context.Context, name string, openURL func(string) error) (AccountMeta, error) {
	addr := a.opt.CallbackAddr
	if addr == "" {
		addr = DefaultCallbackAddr
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return AccountMeta{}, fmt.Errorf("cannot open the sign-in callback on %s (is a Codex CLI sign-in running?): %w", addr, err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	cfg := a.oauthConfig(fmt.Sprintf("http://localhost:%d/auth/callback", port))
	verifier := oauth2.GenerateVerifier()
	state := randomToken()
	authURL := cfg.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier),
		oauth2.SetAuthURLParam("id_token_add_organizations", "true"),
		oauth2.SetAuthURLParam("codex_cli_simplified_flow", "true"))

	type result struct {
		tok *oauth2.Token
		err error
	}
	done := make(chan result, 1)
	ctx, cancel := context.WithTimeout(ctx, signInTimeout)
	defer cancel()
	mux := http.NewServeMux()
	mux.HandleFunc("/auth/callback", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(state)) != 1 {
			// Not the answer to this sign-in (a stale tab, or a web page poking the port):
			// ignore it and keep waiting for the real one.
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, "<h1>Codex Relay</h1><p>This is not the answer to the sign-in in progress, so it was ignored.</p>")
			return
		}
		var res result
		switch {
		case q.Get("error") != "":
			res.err = fmt.Errorf("the sign-in was refused: %s %s", q.Get("error"), q.Get("error_description"))
		case q.Get("code") == "":
			res.err = errors.New("the sign-in answer has no authorization code")
		default:
			res.tok, res.err = cfg.Exchange(a.oauthContext(ctx), q.Get("code"), oauth2.VerifierOption(verifier))
			if res.err != nil {
				res.err = fmt.Errorf("could not exchange the authorization code: %w", oauthError(res.err))
			}
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if res.err != nil {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, "<h1>Codex Relay: sign-in failed</h1><p>%s</p>", html.EscapeString(res.err.Error()))
		} else {
			io.WriteString(w, "<h1>Codex Relay: signed in</h1><p>You can close this tab.</p>")
		}
		select {
		case done <- res:
		default:
		}
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()

	if openURL != nil {
		if err := openURL(authURL); err != nil {
			a.log.Warn("could not open the browser", "error", err)
		}
	}
	select {
	case res := <-done:
		if res.err != nil {
			return AccountMeta{}, res.err
		}
		return a.saveChatGPTLogin(name, res.tok)
	case <-ctx.Done():
		return AccountMeta{}, fmt.Errorf("the sign-in did not finish: %w", ctx.Err())
	}
}

// DeviceCode is what the user types at VerificationURL to sign in on a machine without a browser.
type DeviceCode struct {
	VerificationURL string
	UserCode        string
}

// SignInChatGPTDevice signs in with the device-code flow: show tells the user where to go and
// what to type; it then polls until the sign-in is done.
func (a *App) SignInChatGPTDevice(ctx context.Context, name string, show func(DeviceCode)) (AccountMeta, error) {
	iss := a.issuer()
	client := a.signInClient()
	var start struct {
		DeviceAuthID string `json:"device_auth_id"`
		UserCode     string `json:"user_code"`
		UserCodeAlt  string `json:"usercode"`
		Interval     any    `json:"interval"`
	}
	if err := postJSON(ctx, client, iss+"/api/accounts/deviceauth/usercode", map[string]string{"client_id": CodexClientID}, &start); err != nil {
		return AccountMeta{}, fmt.Errorf("could not start the device sign-in: %w", err)
	}
	if start.UserCode == "" {
		start.UserCode = start.UserCodeAlt
	}
	if start.DeviceAuthID == "" || start.UserCode == "" {
		return AccountMeta{}, errors.New("the device sign-in answer has no code")
	}
	interval := 5 * time.Second
	switch v := start.Interval.(type) {
	case float64:
		interval = time.Duration(v * float64(time.Second))
	case string:
		if d, err := time.ParseDuration(v + "s"); err == nil {
			interval = d
		}
	}
	if a.opt.PollInterval > 0 {
		interval = a.opt.PollInterval
	}
	show(DeviceCode{VerificationURL: iss + "/codex/device", UserCode: start.UserCode})
	ctx, cancel := context.WithTimeout(ctx, signInTimeout)
	defer cancel()
	for {
		select {
		case <-ctx.Done():
			return AccountMeta{}, fmt.Errorf("the device sign-in did not finish: %w", ctx.Err())
		case <-time.After(interval):
		}
		var got struct {
			AuthorizationCode string `json:"authorization_code"`
			CodeVerifier      string `json:"code_verifier"`
		}
		err := postJSON(ctx, client, iss+"/api/accounts/deviceauth/token",
			map[string]string{"device_auth_id": start.DeviceAuthID, "user_code": start.UserCode}, &got)
		var pe *pendingError
		if errors.As(err, &pe) {
			continue // not yet entered
		}
		if err != nil {
			return AccountMeta{}, fmt.Errorf("the device sign-in failed: %w", err)
		}
		cfg := a.oauthConfig(iss + "/deviceauth/callback")
		tok, err := cfg.Exchange(a.oauthContext(ctx), got.AuthorizationCode, oauth2.VerifierOption(got.CodeVerifier))
		if err != nil {
			return AccountMeta{}, fmt.Errorf("could not exchange the device authorization: %w", oauthError(err))
		}
		return a.saveChatGPTLogin(name, tok)
	}
}

type pendingError struct{ status int }

func (e *pendingError) Error() string { return fmt.Sprintf("pending (HTTP %d)", e.status) }

func postJSON(ctx context.Context, client *http.Client, url string, body any, out any) error {
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusTooEarly {
		return &pendingError{resp.StatusCode}
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return json.Unmarshal(data, out)
}

// saveChatGPTLogin stores a new sign-in: a new account, or the renewed tokens of the account
// signed in as the same user in the same workspace (whose cooldown and needs-login mark are
// then cleared).
func (a *App) saveChatGPTLogin(name string, tok *oauth2.Token) (AccountMeta, error) {
	sec := secretFromToken(tok, Secret{})
	claims := parseIDToken(sec.IDToken)
	if sec.AccountID == "" {
		sec.AccountID = claims.AccountID
	}
	if name == "" {
		name = claims.Email
	}
	if name == "" {
		name = "chatgpt"
	}
	m, _, err := a.addOrRenew(name, NewAccount{Kind: "chatgpt", Email: claims.Email}, sec)
	return m, err
}

// secretFromToken turns an OAuth token answer into the stored secret; fields the answer lacks
// (a refresh answer may omit the id token or the refresh token) are kept from old.
func secretFromToken(tok *oauth2.Token, old Secret) Secret {
	sec := old
	sec.APIKey = ""
	sec.AccessToken = tok.AccessToken
	if tok.RefreshToken != "" {
		sec.RefreshToken = tok.RefreshToken
	}
	if id, _ := tok.Extra("id_token").(string); id != "" {
		sec.IDToken = id
	}
	sec.ExpiresAt = tok.Expiry
	if exp := jwtExpiry(sec.AccessToken); !exp.IsZero() {
		sec.ExpiresAt = exp
	}
	if id := parseIDToken(sec.IDToken).AccountID; id != "" {
		sec.AccountID = id
	}
	return sec
}

// idClaims are the id_token claims Codex Relay reads.
type idClaims struct {
	Email     string
	AccountID string // the workspace: chatgpt_account_id (a Team's members share it)
	UserID    string // who in it: chatgpt_user_id (user_id in older tokens), else the subject
	Plan      string
}

// parseIDToken reads the claims of a JWT without verifying it: the token came straight from
// the issuer over TLS, and only who signed in (workspace, user, email) and the plan are taken
// from it.
func parseIDToken(tok string) idClaims {
	var c struct {
		Email   string `json:"email"`
		Subject string `json:"sub"`
		Auth    struct {
			AccountID string `json:"chatgpt_account_id"`
			UserID    string `json:"chatgpt_user_id"`
			OldUserID string `json:"user_id"`
			Plan      string `json:"chatgpt_plan_type"`
		} `json:"https://api.openai.com/auth"`
	}
	if jwtClaims(tok, &c) != nil {
		return idClaims{}
	}
	user := cmpOr(c.Auth.UserID, cmpOr(c.Auth.OldUserID, c.Subject))
	return idClaims{Email: c.Email, AccountID: c.Auth.AccountID, UserID: user, Plan: c.Auth.Plan}
}

// sameChatGPTLogin says whether two ChatGPT sign-ins (their secrets, and the e-mail kept with
// each) are one login: the same user in the same workspace. The members of one Team workspace
// share its chatgpt_account_id, so the workspace alone does not say who signed in: the id
// token's user does, else the e-mail. A sign-in that names neither is taken as its workspace's
// one login, as it was before the user was read.
func sameChatGPTLogin(a Secret, aEmail string, b Secret, bEmail string) bool {
	if a.AccountID == "" || a.AccountID != b.AccountID {
		return false
	}
	ca, cb := parseIDToken(a.IDToken), parseIDToken(b.IDToken)
	if ca.UserID != "" && cb.UserID != "" {
		return ca.UserID == cb.UserID
	}
	ea, eb := cmpOr(ca.Email, aEmail), cmpOr(cb.Email, bEmail)
	if ea != "" && eb != "" {
		return strings.EqualFold(ea, eb)
	}
	return true
}

func jwtExpiry(tok string) time.Time {
	var c struct {
		Exp int64 `json:"exp"`
	}
	if jwtClaims(tok, &c) != nil || c.Exp == 0 {
		return time.Time{}
	}
	return time.Unix(c.Exp, 0)
}

func jwtClaims(tok string, v any) error {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return errors.New("not a JWT")
	}
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// oauthError shortens x/oauth2's errors to what the issuer said (never the token).
func oauthError(err error) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		msg := re.ErrorCode
		if re.ErrorDescription != "" {
			msg += ": " + re.ErrorDescription
		}
		if msg == "" {
			msg = http.StatusText(re.Response.StatusCode)
		}
		return fmt.Errorf("HTTP %d %s", re.Response.StatusCode, msg)
	}
	return err
}

func randomToken() string {
	var b [24]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}
