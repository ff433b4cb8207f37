package proxy

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// One judge of what an upstream said. However it came (an HTTP status and its error body, a
// stream's first or terminal event, a socket's error event, a backend call's answer), what an
// upstream says about a request is judged here, once, into a judgment: its class (what the
// request does next), its scope (what rests: the account, every account of its workspace, or
// the model on the account) and until when. One writer, rest, applies what a judgment rests;
// the phases act on the class alone.
//
// A new error code that should rest an account is one row of codeClasses; a new class is one
// constant, one row, and one case where the phases act on it (judgment.verdict).

// said is what an upstream said of a request, whatever carried it.
type said struct {
	status     int     // the HTTP status; 0 when it came in an event
	code, msg  string  // the error's code and message, redacted
	retryAfter string  // the Retry-After header ("": none)
	resetsAt   int64   // when the limit resets, as the body said (unix seconds; 0: it did not)
	resetIn    float64 // or after how long (seconds; 0: it did not)
	where      string  // how it came, for the reason: "HTTP 429", "stream failed at once", ...
	location   string  // where a redirect points (its host), for the reason
}

// saidHTTP is an upstream's error answer: its status, its Retry-After and its body (redacted).
func saidHTTP(resp *http.Response, body []byte) said {
	e := parseErrorBody(body)
	w := said{status: resp.StatusCode, code: e.code, msg: e.msg, resetsAt: e.resetsAt, resetIn: e.resetIn,
		retryAfter: resp.Header.Get("Retry-After"), where: fmt.Sprintf("HTTP %d", resp.StatusCode)}
	if u, err := resp.Location(); err == nil && resp.StatusCode/100 == 3 {
		w.location = u.Host
	}
	return w
}

// saidEvent is a failure event, or a terminal event whose response failed (its data
// redacted): a response that stopped for a limit says so in its incomplete reason.
func saidEvent(where string, data []byte) said {
	e := parseErrorBody(data)
	if e.code == "" {
		e.code = incompleteReason(data)
	}
	return said{code: e.code, msg: e.msg, resetsAt: e.resetsAt, resetIn: e.resetIn, where: where}
}

// reason is what the trace and the account's last error say of it.
func (w said) reason() string {
	if w.status/100 == 3 {
		if w.location != "" {
			return w.where + ": the upstream redirects to " + w.location + " (not followed): check the account's base URL"
		}
		return w.where + ": the upstream redirects (not followed): check the account's base URL"
	}
	r := w.where
	if w.code != "" {
		if w.status != 0 {
			r += " " + w.code
		} else {
			r += ": " + w.code
		}
	}
	if w.msg != "" {
		r += ": " + truncate(w.msg, 200)
	}
	return r
}

// class is what a request does after an upstream said something of it.
type class int

const (
	relayed      class = iota // the client's own (a prompt too long, say): relayed as it came
	limited                   // a quota or rate limit: the scope rests until then, the next account serves
	flaky                     // an overload or a server error: the same account once more, then the next
	refused                   // the credential was refused: renewed once, else the account needs a sign-in
	unsealed                  // the account could not read sealed content: the same account without it
	redirected                // a redirect, never followed: the account's base URL is wrong
	noModel                   // the account does not serve the model (404): the model rests on it
	socketEnded               // the upstream socket reached its time limit: the turn again on a new one
	lostPrevious              // the upstream does not know the response a turn follows
)

// scope is what a judgment rests.
type scope int

const (
	accountScope   scope = iota // the account
	workspaceScope              // every account of its ChatGPT workspace (a Team plan's pooled limit)
	modelScope                  // the model, on the account
)

// codeClasses is the one table of upstream error codes.
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
// never sent flex: tier.go).
//
// socketEnded, lostPrevious: the socket wire's own matters (socketwire.go renews the socket).
var codeClasses = map[string]class{
	"rate_limit_exceeded": limited, "usage_limit_reached": limited, "insufficient_quota": limited,
	"quota_exceeded": limited, "usage_not_included": limited, "slow_down": limited,
	"credit_balance_exhausted": limited, "organization_spend_limit_exceeded": limited,
	"project_spend_limit_exceeded": limited, "organization_usage_limit_exceeded": limited,

	"": flaky, "server_error": flaky, "server_is_overloaded": flaky, "overloaded": flaky,
	"internal_error": flaky, "service_unavailable": flaky, "flex_unavailable": flaky,

	"invalid_encrypted_content": unsealed,

	"websocket_connection_limit_reached": socketEnded,
	"previous_response_not_found":        lostPrevious,
}

// workspaceLimit reports whether code is a limit of the whole ChatGPT workspace.
func workspaceLimit(code string) bool { return strings.HasPrefix(code, "workspace_") }

// codeClass is what the table says of code, and what it rests.
func codeClass(code string) (class, scope) {
	if workspaceLimit(code) {
		return limited, workspaceScope
	}
	return codeClasses[code], accountScope
}

// judgment is what the judge made of what an upstream said.
type judgment struct {
	class  class
	scope  scope
	until  time.Time // when what rests may serve again (limited, noModel)
	code   string
	reason string
}

// judge judges what an upstream said of a request to an account whose spent usage window
// resets at windowReset (zero: none known). It changes nothing: rest applies the judgment.
func judge(now, windowReset time.Time, w said) judgment {
	cl, sc := codeClass(w.code)
	j := judgment{code: w.code, reason: w.reason(), scope: accountScope}
	switch {
	case w.status/100 == 3:
		// Never followed (the credential would go wherever it points), never relayed.
		j.class = redirected
	case w.status == http.StatusTooManyRequests || w.status == http.StatusPaymentRequired || cl == limited:
		// A limit, whatever the status it came with (a spend limit is a 400 or a 403, say).
		j.class, j.scope = limited, sc
		j.until = restEnd(now, w.retryAfter, w.resetsAt, w.resetIn, windowReset)
	case w.status == http.StatusUnauthorized || w.status == http.StatusForbidden:
		j.class = refused
	case w.status == http.StatusNotFound:
		j.class, j.scope, j.until = noModel, modelScope, now.Add(modelBlockFor)
	case w.status == http.StatusRequestTimeout || w.status >= 500:
		j.class = flaky
	case (w.status == 0 || w.status == http.StatusBadRequest) && sealedRefusal(w.code, w.msg):
		j.class = unsealed
	case w.status == 0:
		j.class = cl // an event: the table says it all
	}
	return j
}

// judgeFor judges what an upstream said of a request to m.
func (s *Server) judgeFor(m *member, w said) judgment {
	now := s.now()
	return judge(now, m.quotaReset(now), w)
}

// sealedRefusal reports whether an upstream error says that it could not read sealed content:
// code invalid_encrypted_content; or a message saying that encrypted content could not be
// verified or decrypted (upstreams that send code null), or that encrypted function content
// could not be decrypted or decoded (multi-agent content, code invalid_request_body).
func sealedRefusal(code, msg string) bool {
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

// clientStatus is the status a client that asked for a whole answer gets for a failure the
// upstream said in its stream.
func (j judgment) clientStatus() int {
	switch j.class {
	case limited:
		return http.StatusTooManyRequests
	case flaky:
		return http.StatusBadGateway
	}
	return http.StatusBadRequest
}

// rest applies what j rests, m's credential cred having met it: the account until then (or
// every account of its workspace), the model on the account, or, for a redirect, a rest by
// the breaker's rules. The one writer of what an upstream's word rests.
func (s *Server) rest(m *member, cred Credential, model string, j judgment) {
	switch j.class {
	case limited:
		m.coolDown(j.until, j.reason)
		if j.scope == workspaceScope && cred.AccountID != "" {
			// Every other ChatGPT account whose credential names the same chatgpt-account-id,
			// as its last use or usage read showed it; one not used yet in this process rests
			// once it meets the limit itself.
			for _, o := range s.pool.list() {
				if o != m && o.Kind == m.Kind && o.workspace() == cred.AccountID {
					o.coolDown(j.until, j.reason+" (a limit of the workspace "+m.Name+" shares)")
				}
			}
		}
	case noModel:
		m.blockModel(model, j.until, j.reason)
	case redirected:
		m.fail(s.now(), false, j.reason, s.opt.Breaker)
	}
}

// restEnd is when an account at its limit may be tried again: the Retry-After (seconds or an
// HTTP date), else the reset the answer named (at a time, else after a while: resetIn
// seconds), else the reset of its spent usage window, else defaultCooldown; never further than
// maxCooldownLength, however far the upstream asks (a huge, infinite or overflowing value gets
// the cap).
func restEnd(now time.Time, retryAfter string, resetsAt int64, resetIn float64, windowReset time.Time) time.Time {
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
