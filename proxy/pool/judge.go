package pool

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/codexrelay/codexrelay/proxy/internal/redact"
)

// One judge of what an upstream said. However it came (an HTTP status and its error body, a
// stream's first or terminal event, a socket's error event, a backend call's answer), what an
// upstream says about a request is judged here, once, into a judgment: its class (what the
// request does next), its scope (what rests: the account, every account of its workspace, or
// the model on the account) and until when. One writer, Pool.Rest, applies what a judgment rests;
// the phases act on the class alone.
//
// A new error code that should rest an account is one row of CodeClasses; a new class is one
// constant, one row, and one case where the phases act on it (proxy's exchange.act).

// said is what an upstream said of a request, whatever carried it.
type Said struct {
	Status     int     // the HTTP status; 0 when it came in an event
	Code, Msg  string  // the error's code and message, redacted
	RetryAfter string  // the Retry-After header ("": none)
	ResetsAt   int64   // when the limit resets, as the body said (unix seconds; 0: it did not)
	ResetIn    float64 // or after how long (seconds; 0: it did not)
	Where      string  // how it came, for the reason: "HTTP 429", "stream failed at once", ...
	Location   string  // where a redirect points (its host), for the reason
	// Bucket is the limit the answer says is active (x-codex-active-limit: a metered feature
	// such as codex_bengalfox, or the account's own limit); "" when it names none.
	Bucket string
}

// SaidHTTP is an upstream's error answer: its status, its Retry-After and its body (redacted).
func SaidHTTP(resp *http.Response, body []byte) Said {
	e := ParseErrorBody(body)
	w := Said{Status: resp.StatusCode, Code: e.Code, Msg: e.Msg, ResetsAt: e.ResetsAt, ResetIn: e.ResetIn,
		RetryAfter: resp.Header.Get("Retry-After"), Where: fmt.Sprintf("HTTP %d", resp.StatusCode),
		Bucket: ActiveLimit(resp.Header)}
	if u, err := resp.Location(); err == nil && resp.StatusCode/100 == 3 {
		w.Location = u.Host
	}
	return w
}

// SaidEvent is a failure event, or a terminal event whose response failed (its data
// redacted): a response that stopped for a limit says so in its incomplete reason.
func SaidEvent(where string, data []byte) Said {
	e := ParseErrorBody(data)
	if e.Code == "" {
		e.Code = IncompleteReason(data)
	}
	return Said{Code: e.Code, Msg: e.Msg, ResetsAt: e.ResetsAt, ResetIn: e.ResetIn, Where: where}
}

// Reason is what the trace and the account's last error say of it.
func (w Said) Reason() string {
	if w.Status/100 == 3 {
		if w.Location != "" {
			return w.Where + ": the upstream redirects to " + w.Location + " (not followed): check the account's base URL"
		}
		return w.Where + ": the upstream redirects (not followed): check the account's base URL"
	}
	r := w.Where
	if w.Code != "" {
		if w.Status != 0 {
			r += " " + w.Code
		} else {
			r += ": " + w.Code
		}
	}
	if w.Msg != "" {
		r += ": " + redact.Truncate(w.Msg, 200)
	}
	return r
}

// Class is what a request does after an upstream said something of it.
type Class int

const (
	Relayed      Class = iota // the client's own (a prompt too long, say): relayed as it came
	Limited                   // a quota or rate limit: the scope rests until then, the next account serves
	Flaky                     // an overload or a server error: the same account once more, then the next
	Refused                   // the credential was refused: renewed once, else the account needs a sign-in
	Unsealed                  // the account could not read sealed content: the same account without it
	Redirected                // a redirect, never followed: the account's base URL is wrong
	NoModel                   // the account does not serve the model (404): the model rests on it
	SocketEnded               // the upstream socket reached its time limit: the turn again on a new one
	LostPrevious              // the upstream does not know the response a turn follows
)

// Scope is what a judgment rests.
type Scope int

const (
	AccountScope   Scope = iota // the account
	WorkspaceScope              // every account of its ChatGPT workspace (a Team plan's pooled limit)
	ModelScope                  // the model, on the account
	BucketScope                 // the bucket (a metered feature) that meters the model, on the account
)

// CodeClasses is the one table of upstream error codes.
//
// limited: the account cannot serve until its limit resets: it rests (for the Retry-After or the
// reset the upstream names, else defaultCooldown) and the request moves on.
//   - rate_limit_exceeded, usage_limit_reached, insufficient_quota, quota_exceeded,
//     usage_not_included: the backend's limits and plan.
//   - slow_down: a rate limit under another name (the backend asks the client to back off);
//     another account is not slowed by it.
//   - credit_balance_exhausted: the account's credits (pay-as-you-go beyond the plan) are spent.
//   - organization_spend_limit_exceeded, project_spend_limit_exceeded,
//     organization_usage_limit_exceeded: an API key's organization or project reached the
//     spending limit its owner set; another key, of another organization, can serve.
//   - workspace_* (workspaceLimit): a limit of the ChatGPT workspace: every account of that
//     workspace rests with it.
//
// flaky (in an event; over HTTP the status says it): an overload or server error, an event
// with no code, and flex_unavailable (the flex tier has no capacity now; a ChatGPT account is
// never sent flex: proxy's tier.go).
//
// socketEnded, lostPrevious: the socket wire's own matters (proxy's socketwire.go renews the socket).
var CodeClasses = map[string]Class{
	"rate_limit_exceeded": Limited, "usage_limit_reached": Limited, "insufficient_quota": Limited,
	"quota_exceeded": Limited, "usage_not_included": Limited, "slow_down": Limited,
	"credit_balance_exhausted": Limited, "organization_spend_limit_exceeded": Limited,
	"project_spend_limit_exceeded": Limited, "organization_usage_limit_exceeded": Limited,

	"": Flaky, "server_error": Flaky, "server_is_overloaded": Flaky, "overloaded": Flaky,
	"internal_error": Flaky, "service_unavailable": Flaky, "flex_unavailable": Flaky,

	"invalid_encrypted_content": Unsealed,

	"websocket_connection_limit_reached": SocketEnded,
	"previous_response_not_found":        LostPrevious,
}

// workspaceLimit reports whether code is a limit of the whole ChatGPT workspace.
func workspaceLimit(code string) bool { return strings.HasPrefix(code, "workspace_") }

// CodeClass is what the table says of code, and what it rests.
func CodeClass(code string) (Class, Scope) {
	if workspaceLimit(code) {
		return Limited, WorkspaceScope
	}
	return CodeClasses[code], AccountScope
}

// Judgment is what the judge made of what an upstream said.
type Judgment struct {
	Class  Class
	Scope  Scope
	Until  time.Time // when what rests may serve again (limited, noModel)
	Code   string
	Reason string
	Bucket string // the bucket that rests (BucketScope)
}

// judge judges what an upstream said of a request to an account whose spent usage window
// resets at windowReset (zero: none known). It changes nothing: Pool.Rest applies the judgment.
func judge(now, windowReset time.Time, w Said) Judgment {
	cl, sc := CodeClass(w.Code)
	j := Judgment{Code: w.Code, Reason: w.Reason(), Scope: AccountScope}
	switch {
	case w.Status/100 == 3:
		// Never followed (the credential would go wherever it points), never relayed.
		j.Class = Redirected
	case w.Status == http.StatusTooManyRequests || w.Status == http.StatusPaymentRequired || cl == Limited:
		// A limit, whatever the status it came with (a spend limit is a 400 or a 403, say).
		j.Class, j.Scope = Limited, sc
		j.Until = RestEnd(now, w.RetryAfter, w.ResetsAt, w.ResetIn, windowReset)
	case w.Status == http.StatusUnauthorized || w.Status == http.StatusForbidden:
		j.Class = Refused
	case w.Status == http.StatusNotFound:
		j.Class, j.Scope, j.Until = NoModel, ModelScope, now.Add(modelBlockFor)
	case w.Status == http.StatusRequestTimeout || w.Status >= 500:
		j.Class = Flaky
	case (w.Status == 0 || w.Status == http.StatusBadRequest) && SealedRefusal(w.Code, w.Msg):
		j.Class = Unsealed
	case w.Status == 0:
		j.Class = cl // an event: the table says it all
	}
	return j
}

// Judge judges what an upstream said of a request to m. It changes nothing: Rest applies it.
func (p *Pool) Judge(m *Member, w Said) Judgment {
	now := p.now()
	bucket := m.isBucket(w.Bucket) && !workspaceLimit(w.Code) // a workspace's limit is the whole account's
	var windowReset time.Time
	if bucket {
		windowReset = m.bucketReset(w.Bucket, now) // a limit of one bucket ends with its window
	} else {
		windowReset = m.QuotaReset(now)
	}
	j := judge(now, windowReset, w)
	if bucket && j.Class == Limited {
		// Its models rest on the account, and the account serves the others.
		j.Scope, j.Bucket = BucketScope, w.Bucket
	}
	return j
}

// SealedRefusal reports whether an upstream error says that it could not read sealed content:
// code invalid_encrypted_content; or a message saying that encrypted content could not be
// verified or decrypted (upstreams that send code null), or that encrypted function content
// could not be decrypted or decoded (multi-agent content, code invalid_request_body).
func SealedRefusal(code, msg string) bool {
	if code == "invalid_encrypted_content" {
		return true
	}
	l := strings.ToLower(msg)
	if !strings.Contains(l, "encrypted") {
		return false
	}
	return strings.Contains(l, "could not be verified") || strings.Contains(l, "could not be decrypted") ||
		strings.Contains(l, "could not be decoded")
}

// ClientStatus is the status a client that asked for a whole answer gets for a failure the
// upstream said in its stream.
func (j Judgment) ClientStatus() int {
	switch j.Class {
	case Limited:
		return http.StatusTooManyRequests
	case Flaky:
		return http.StatusBadGateway
	}
	return http.StatusBadRequest
}

// Rest applies what j rests, m's credential cred having met it: the account until then (or
// every account of its workspace, or the bucket that meters model on it), the model on the account, or, for a redirect, a rest by
// the breaker's rules. The one writer of what an upstream's word rests.
func (p *Pool) Rest(m *Member, cred Credential, model string, j Judgment) {
	switch {
	case j.Class == Limited && j.Scope == BucketScope:
		m.restBucket(j.Bucket, j.Until, j.Reason)
		p.learnBucket(model, j.Bucket)
	case j.Class == Limited:
		m.coolDown(j.Until, j.Reason)
		if j.Scope == WorkspaceScope && cred.AccountID != "" {
			// Every other ChatGPT account whose credential names the same chatgpt-account-id,
			// as its last use or usage read showed it; one not used yet in this process rests
			// once it meets the limit itself.
			for _, o := range p.List() {
				if o != m && o.Kind == m.Kind && o.Workspace() == cred.AccountID {
					o.coolDown(j.Until, j.Reason+" (a limit of the workspace "+m.Name+" shares)")
				}
			}
		}
	case j.Class == NoModel:
		m.blockModel(model, j.Until, j.Reason)
	case j.Class == Redirected:
		p.Fail(m, false, j.Reason)
	}
}

// RestEnd is when an account at its limit may be tried again: the Retry-After (seconds or an
// HTTP date), else the reset the answer named (at a time, else after a while: resetIn
// seconds), else the reset of its spent usage window, else defaultCooldown; never further than
// maxCooldownLength, however far the upstream asks (a huge, infinite or overflowing value gets
// the cap).
func RestEnd(now time.Time, retryAfter string, resetsAt int64, resetIn float64, windowReset time.Time) time.Time {
	after := func(n float64) time.Time {
		if n >= maxCooldownLength.Seconds() {
			return now.Add(maxCooldownLength)
		}
		return now.Add(max(time.Duration(n*float64(time.Second)), time.Second)) // under a second: the next one
	}
	if retryAfter != "" {
		if n, err := strconv.ParseFloat(strings.TrimSpace(retryAfter), 64); err == nil && n >= 0 && !math.IsNaN(n) {
			return after(n)
		}
		if t, err := http.ParseTime(retryAfter); err == nil && t.After(now) {
			return minTime(t, now.Add(maxCooldownLength))
		}
	}
	if resetsAt == 0 && resetIn > 0 && !math.IsNaN(resetIn) {
		return after(resetIn)
	}
	if resetsAt == 0 && !windowReset.IsZero() {
		resetsAt = windowReset.Unix()
	}
	if resetsAt > 0 {
		if t := time.Unix(resetsAt, 0); t.After(now) {
			return minTime(t, now.Add(maxCooldownLength))
		}
	}
	return now.Add(defaultCooldown)
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
