package pool

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// renewable is a sign-in whose token the upstream refuses until it is renewed; renewals counts.
type renewable struct {
	token    string
	renewals int
	err      error // what Credential fails with (nil: nothing)
}

func (c *renewable) Credential(context.Context) (Credential, error) {
	return Credential{Token: c.token}, c.err
}

func (c *renewable) Refresh(context.Context, Credential) (Credential, error) {
	c.renewals++
	c.token = fmt.Sprintf("renewed-%d", c.renewals)
	return Credential{Token: c.token}, nil
}

func newTestPool(accounts ...Account) (*Pool, time.Time) {
	now := time.Unix(1_800_000_000, 0)
	p := New(nil, func() time.Time { return now }, Breaker{})
	p.Set(accounts)
	return p, now
}

// The one way to call an account: a refused credential is renewed once and the call made
// again; refused again, the account needs a sign-in; what a request's call meets rests what it
// says, a side call's (model "") rests nothing and is marked only by a 401.
func TestCallRenewsOnceJudgesAndRests(t *testing.T) {
	said := func(status int, code string) *Said {
		return &Said{Status: status, Code: code, Where: fmt.Sprintf("HTTP %d", status)}
	}
	cases := []struct {
		name         string
		model        string
		answer       func(Credential) *Said
		wantRenewals int
		wantState    string
		wantClass    Class
		wantJudged   bool
	}{
		{"a 401, renewed", "gpt-5", func(c Credential) *Said {
			if c.Token == "renewed-1" {
				return nil
			}
			return said(401, "")
		}, 1, StateReady, 0, false},
		{"a 401 twice", "gpt-5", func(Credential) *Said { return said(401, "") }, 1, StateNeedsLogin, Refused, true},
		{"a 403 to a request", "gpt-5", func(Credential) *Said { return said(403, "") }, 1, StateNeedsLogin, Refused, true},
		{"a 403 to a side call", "", func(Credential) *Said { return said(403, "") }, 0, StateReady, Refused, true},
		{"a 401 twice to a side call", "", func(Credential) *Said { return said(401, "") }, 1, StateNeedsLogin, Refused, true},
		{"a limit on a request", "gpt-5", func(Credential) *Said { return said(429, "usage_limit_reached") }, 0, StateCooldown, Limited, true},
		{"a limit on a side call", "", func(Credential) *Said { return said(429, "") }, 0, StateReady, Limited, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cred := &renewable{token: "stale"}
			p, now := newTestPool(Account{Name: "a", Kind: KindChatGPT, Credentials: cred})
			m := p.List()[0]
			out := p.Call(context.Background(), m, c.model, c.answer)
			if out.Err != nil || cred.renewals != c.wantRenewals {
				t.Fatalf("err %v, %d renewals; want %d", out.Err, cred.renewals, c.wantRenewals)
			}
			if (out.Judgment != nil) != c.wantJudged || out.Judgment != nil && out.Judgment.Class != c.wantClass {
				t.Fatalf("judgment %+v", out.Judgment)
			}
			if st := m.State(now); st != c.wantState {
				t.Fatalf("state %s, want %s", st, c.wantState)
			}
		})
	}
}

// A credential that cannot be read sends nothing: a sign-in to renew marks the account, a
// secret store that cannot be read says so and marks nothing.
func TestCallWithoutACredentialSendsNothing(t *testing.T) {
	for _, c := range []struct {
		err       error
		wantState string
		storeDown bool
	}{
		{fmt.Errorf("sign in again: %w", ErrNeedsLogin), StateNeedsLogin, false},
		{fmt.Errorf("locked: %w", ErrSecretStoreUnavailable), StateReady, true},
	} {
		p, now := newTestPool(Account{Name: "a", Kind: KindChatGPT, Credentials: &renewable{err: c.err}})
		m := p.List()[0]
		sent := false
		out := p.Call(context.Background(), m, "gpt-5", func(Credential) *Said { sent = true; return nil })
		if sent || !errors.Is(out.Err, c.err) || out.StoreDown != c.storeDown || m.State(now) != c.wantState {
			t.Fatalf("%v: sent %v, outcome %+v, state %s", c.err, sent, out, m.State(now))
		}
	}
}
