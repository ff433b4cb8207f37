package pool

import (
	"context"
	"errors"

	"github.com/codexrelay/codexrelay/proxy/internal/redact"
)

// One way to call an account, whatever the call is for: a client's request, the re-making of
// a compaction, a usage or credit read, the model listing. Call reads the account's credential
// (noting its workspace), makes the call, and when the upstream refuses the credential renews
// it once and makes the call again; what an upstream says of a call that did not succeed is
// judged, and what it rests is rested. A credential the upstream still refuses marks the
// account: it needs a sign-in (an API key: the key was rejected), whichever call met it.

// A Send makes one call to an account with cred. It returns what the upstream said when the
// call met an error answer or event (a status that is not 2xx, a failure in a stream), nil
// when there is nothing to judge: it succeeded, or broke in a way that is the caller's to
// weigh (a timeout, a reset connection).
type Send func(cred Credential) *Said

// Outcome is how a call ended: the credential of its last send, and the judgment of what the
// upstream said (nil: nothing was said). Err is set, and nothing was sent, when the
// credential could not be read: StoreDown says that the secret store itself could not be.
type Outcome struct {
	Cred      Credential
	Judgment  *Judgment
	Err       error
	StoreDown bool
}

// Call calls m with send (see above). model is the model a request is for: what the upstream
// says of it rests the account, its workspace or the model. A side call (model ""), whose
// limits and refusals are its endpoint's own (a 403: a feature the plan lacks), rests nothing,
// though a credential refused with a 401, after its renewal, still marks the account.
func (p *Pool) Call(ctx context.Context, m *Member, model string, send Send) Outcome {
	cred, err := p.credential(ctx, m)
	if err != nil {
		return Outcome{Err: err, StoreDown: errors.Is(err, ErrSecretStoreUnavailable)}
	}
	for renewed := false; ; renewed = true {
		w := send(cred)
		if w == nil {
			return Outcome{Cred: cred}
		}
		j := p.Judge(m, *w)
		if j.Class == Refused && (model != "" || w.Status == 401) {
			if !renewed {
				next, err := p.renew(ctx, m, cred)
				if err == nil {
					cred = next
					continue
				}
				if !errors.Is(err, errCannotRenew) {
					j.Reason += "; refresh failed: " + redact.String(err.Error(), cred.Token)
				}
			}
			m.markNeedsLogin(j.Reason)
		} else if model != "" {
			p.Rest(m, cred, model, j)
		}
		return Outcome{Cred: cred, Judgment: &j}
	}
}

var errCannotRenew = errors.New("the credential cannot be renewed")

// credential reads m's credential and notes its workspace. A sign-in that must be renewed by
// the user marks the account; any other failure is its last error.
func (p *Pool) credential(ctx context.Context, m *Member) (Credential, error) {
	cred, err := m.Credentials.Credential(ctx)
	if err != nil {
		reason := "credential unavailable: " + err.Error()
		if errors.Is(err, ErrNeedsLogin) {
			m.markNeedsLogin(reason)
		} else {
			m.setLastError(reason)
		}
		return cred, err
	}
	m.sawCredential(cred)
	return cred, nil
}

// renew asks m's credentials for a credential to replace the one the upstream refused.
func (p *Pool) renew(ctx context.Context, m *Member, refused Credential) (Credential, error) {
	r, ok := m.Credentials.(Refresher)
	if !ok {
		return Credential{}, errCannotRenew
	}
	cred, err := r.Refresh(ctx, refused)
	if err != nil {
		return Credential{}, err
	}
	m.sawCredential(cred)
	return cred, nil
}
