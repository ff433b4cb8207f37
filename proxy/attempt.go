package proxy

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/codexrelay/codexrelay/proxy/internal/stat"
	"github.com/codexrelay/codexrelay/proxy/sse"
)

// Attempt: build the try of one account the plan names (its wire and its body, once), send it,
// classify the answer, and say whether it can be relayed or why the next account should be
// tried. Nothing reaches the client in this phase, so that any failure (an error status, a
// broken or silent stream, a timeout) can move on.

// verdicts of one upstream attempt.
type verdict int

const (
	served       verdict = iota // the answer can be relayed (a fit one, or the client's own mistake)
	nextAccount                 // this account cannot serve now: try the next one
	transient                   // retry once on the same account, then nextAccount
	timedOut                    // no answer in time: the next account at once, and this one rests
	unauthorized                // the credential was refused: refresh it once, else needs_login
	fallback                    // the upstream refused a WebSocket: the same account over HTTP
	resealed                    // the account refused sealed content: the same account without it
	busy                        // the relay had no room to hold the answer (memory.go): 503 relay_busy, no account's failure
)

// accountTry is one account tried with one wire, built once: the account and the target model
// it is tried for, the wire between the client and it (chosen once), the body that wire sends
// (built once: a retry on the same account resends the same bytes) in the pooled buffer it was
// built into, and the credential of its latest send. A new try of the same account is built
// when the wire or the body must change (fallback, resealed).
type accountTry struct {
	m    *member
	tg   *target
	wire *wire
	body builtBody
	err  error // why no body could be built for m (a request that cannot be translated)
	cred Credential
	// storeErr says why the credential could not be read, when the keychain is unavailable.
	storeErr string
}

// failure is why an account could not serve a request, and whether it is what no other
// account mends (a tally counts those: route.go).
type failure struct {
	reason         string
	untranslatable error // why no body could be built for the account (nil: one was)
	storeErr       string
}

// newTry builds the try of m for target tg. What the trace says of the body is the last try's:
// the serving account's.
func (x *exchange) newTry(m *member, tg *target) *accountTry {
	tr := &accountTry{m: m, tg: tg, wire: x.wireFor(m)}
	x.t.TurnStateOmitted = false
	x.noteLite(tr)
	tr.body, tr.err = tr.wire.body(x, tr)
	return tr
}

// tryAccount runs the attempts on one account. It reports whether the request is finished
// (answered, or the client went away) and otherwise why the account failed.
//
// A failure before the first byte reached the client (an error status, a broken or empty
// stream, a timeout) moves the request on: a flaky one (5xx, a reset, a stream that broke) is
// tried once more on the same account, a timeout is not. Each counts as the account's failure,
// and the breaker makes an account that keeps failing rest.
func (x *exchange) tryAccount(m *member, tg *target) (done bool, f failure) {
	// A client request counts once for each account it is sent to, however many tries there.
	m.requests.Add(1)
	if v, why := x.remakeCompactions(m, tg); v == busy {
		x.reject(x.relayBusy(), OutcomeError) // no room to re-make it: the relay's matter
		return true, failure{}
	} else if v != served {
		// m could not make its own compaction of the conversation: its failure, as an
		// attempt's would be.
		m.failures.Add(1)
		switch v {
		case unauthorized:
			m.markNeedsLogin(why)
		case transient, timedOut:
			m.fail(x.s.now(), v == timedOut, why, x.s.opt.Breaker)
		}
		return false, failure{reason: why}
	}
	tr := x.newTry(m, tg)
	refreshed := false
	for n := 0; n < 2; n++ {
		if tr.err != nil {
			if ae, ok := tr.err.(*apiError); ok && (ae.Code == "relay_busy" || ae.Status == 499) {
				// No room in the memory budget to make the body, or the client left while it
				// waited: the relay's matter, not the account's, and no other account fares better.
				x.reject(ae, OutcomeError)
				return true, failure{}
			}
			return false, failure{reason: "cannot translate the request for this account: " + tr.err.Error(), untranslatable: tr.err}
		}
		if n > 0 && !refreshed {
			t := time.NewTimer(x.s.opt.RetryBackoff)
			select {
			case <-x.r.Context().Done():
				t.Stop()
				return false, failure{reason: "client went away"}
			case <-t.C:
			}
		}
		v, why, a := x.attempt(tr)
		if v == served && a.resp.StatusCode/100 == 2 {
			v, why = x.await(tr, a) // a 2xx answer: is it one to relay?
		}
		switch v {
		case served:
			x.t.Account = m.Name
			x.respond(a)
			x.keepSession(m)
			return true, failure{}
		case nextAccount:
			m.failures.Add(1)
			return false, failure{reason: why, storeErr: tr.storeErr}
		case busy: // await closed the answer
			x.reject(x.relayBusy(), OutcomeError)
			return true, failure{}
		case fallback, resealed:
			// Not the account's failure: the same account again, on a new socket or over HTTP
			// (fallback), or without the sealed items it could not read (resealed, once), a
			// compaction among them re-made on it first.
			if v == resealed {
				if rv, rwhy := x.remakeCompactions(m, tg); rv == busy {
					x.reject(x.relayBusy(), OutcomeError)
					return true, failure{}
				} else if rv != served {
					m.failures.Add(1)
					return false, failure{reason: rwhy}
				}
			}
			tr = x.newTry(m, tg)
			n--
			continue
		case unauthorized:
			m.failures.Add(1)
			// A sign-in can be renewed: refresh once, then retry the request on this account.
			if r, ok := m.Credentials.(Refresher); ok && !refreshed {
				if _, err := r.Refresh(x.r.Context(), tr.cred); err == nil {
					refreshed = true
					n--
					continue
				} else {
					why += "; refresh failed: " + redactString(err.Error(), tr.cred.Token)
				}
			}
			m.markNeedsLogin(why)
			return false, failure{reason: why}
		}
		if x.r.Context().Err() != nil {
			return false, failure{reason: "client went away"}
		}
		m.failures.Add(1)
		if m.fail(x.s.now(), v == timedOut, why, x.s.opt.Breaker) || v == timedOut {
			return false, failure{reason: why}
		}
		f.reason = why
	}
	return false, f
}

// keepSession records that m served the request: only an account that produced an answer
// keeps the session.
func (x *exchange) keepSession(m *member) {
	if x.t.Status >= 400 {
		return
	}
	m.succeeded()
	x.s.pool.remember(x.req.session, m.key(), x.s.now())
	k := m.key()
	x.s.lastServed.Store(&k)
}

// attempt sends the try's body to its account once and reads the answer's status. An answer
// comes back with served: a 2xx one for await to look at, or one that is the client's own
// mistake, to relay; any other ends here, as the account's failure.
//
// The request's phases run one after the other from tryAccount (attempt, await, respond), not
// nested: net/http's first write of the answer's headers needs a deep stack, and a handler
// goroutine whose stack once grew keeps the larger size for the rest of the stream, which
// under load is a quarter of the relay's memory.
func (x *exchange) attempt(tr *accountTry) (verdict, string, *answer) {
	s, m := x.s, tr.m
	ctx := x.r.Context()
	start := s.now()
	if x.times.firstSend.IsZero() {
		x.times.firstSend = start
	}
	cred, err := m.Credentials.Credential(ctx)
	if err != nil {
		reason := "credential unavailable: " + err.Error()
		switch {
		case errors.Is(err, ErrNeedsLogin):
			m.markNeedsLogin(reason)
		case errors.Is(err, ErrSecretStoreUnavailable):
			tr.storeErr = err.Error()
			m.setLastError(reason)
		default:
			m.setLastError(reason)
		}
		x.record(m, start, 0, reason)
		return nextAccount, reason, nil
	}
	tr.cred = cred
	m.sawCredential(cred)
	tmo := s.Timeouts()
	out, err := tr.wire.send(x, tr, tmo)
	x.t.UpstreamBytes += int64(out.bytes)
	if errors.Is(err, errNoSocket) {
		return fallback, "", nil // the wire cannot reach m: the same account by another
	}
	resp, c := out.resp, out.call
	if err != nil {
		reason := describeTransportError(err, cred.Token)
		x.record(m, start, 0, reason)
		if errors.Is(err, errHeaderTimeout) {
			return timedOut, reason, nil
		}
		return transient, reason, nil
	}
	s.learnTurnState(m, resp.Header)
	if resp.StatusCode/100 != 2 {
		v, reason, body := x.classifyStatus(tr, resp)
		x.record(m, start, resp.StatusCode, reason)
		if v == served {
			// The client's own mistake: respond relays it (the call ends there).
			x.t.Error = reason
			return v, reason, &answer{tr: tr, resp: resp, call: c, plain: body, started: start, timeouts: tmo}
		}
		resp.Body.Close()
		c.end()
		return v, reason, nil
	}
	return served, "", &answer{tr: tr, resp: resp, call: c, rd: out.events, started: start, timeouts: tmo}
}

// sent is what a wire's send function sent and got: the answer's status and headers, the call
// that bounds it, the bytes sent and, for a wire whose answer is no HTTP body, its events.
type sent struct {
	resp   *http.Response
	call   *call
	bytes  int
	events eventSource
}

// sendHTTP is the send function of the HTTP wires: the try's body posted to the wire's path.
func sendHTTP(x *exchange, tr *accountTry, tmo Timeouts) (sent, error) {
	// ChatGPT accounts always stream; the others stream when the client does; a document never.
	m, body, h := tr.m, tr.body, http.Header(nil)
	stream := !tr.wire.document && (x.req.stream || m.Kind == KindChatGPT)
	if tr.wire.document {
		h = x.backendHeaders()
	} else {
		h = x.upstreamHeaders(tr, false)
	}
	resp, c, err := x.s.send(x.r.Context(), m, tr.cred, tr.wire.to(x), body.reader(), len(body.b), stream, h, tmo.Header)
	return sent{resp: resp, call: c, bytes: len(body.b)}, err
}

// await reads a 2xx answer up to what tells whether it can be relayed: the first real event of
// a stream (the bookkeeping events before it are held back), or the whole answer when the
// client gets it whole. Nothing has reached the client yet, so any failure here (a failure
// event, a break, an empty stream, a timeout) moves the request on. Served means respond may
// relay a; otherwise a is closed.
func (x *exchange) await(tr *accountTry, a *answer) (v verdict, reason string) {
	m, c, status := tr.m, a.call, a.resp.StatusCode
	defer func() {
		x.record(m, a.started, status, reason)
		if v == served {
			x.t.LatencyBreakdown.UpstreamHeadersMs = stat.Ms(x.s.now().Sub(x.times.firstSend))
		} else {
			a.close()
		}
	}()
	broke := func(what string, err error) (verdict, string) {
		err = c.explain(err)
		if why, ok := tr.wire.renew(x, nil, err); ok {
			return fallback, what + why
		}
		if !errors.Is(err, io.EOF) && !errors.Is(err, sse.ErrTruncated) {
			what += ": " + describeTransportError(err, tr.cred.Token)
		}
		if isTimeout(err) {
			return timedOut, what
		}
		return transient, what
	}
	var err error
	if tr.wire.document {
		// A backend call's answer is relayed as it comes (relayDocument), not held.
		c.live(a.timeouts.StreamIdle)
		return served, ""
	}
	if a.rd == nil && !isEventStream(a.resp.Header) {
		// A plain answer is read whole before any of it is relayed, within the relay's
		// memory budget.
		c.live(a.timeouts.StreamIdle)
		if a.plain, err = x.readWhole(c.body(a.resp.Body), a.resp.ContentLength, maxEventBytes); err != nil {
			if errors.Is(err, errRelayBusy) {
				return busy, "no room in the relay's memory budget for the answer"
			}
			return broke("the upstream answer broke off", err)
		}
		return served, ""
	}
	c.arm(a.timeouts.FirstEvent, errFirstEventTimeout)
	if a.rd == nil {
		a.rd = namedEvents{sse.NewReader(c.body(a.resp.Body), maxEventBytes)}
	}
	held, first, ferr := peekStream(a.rd)
	for _, ev := range held {
		x.learnEvent(m, ev.Name, ev.Data) // a turn state m issues before its first output
	}
	if ferr != nil {
		if len(held) == 0 {
			return broke("the upstream stream ended before its first event", ferr)
		}
		return broke("the upstream stream ended after "+held[len(held)-1].Name+", before its first output", ferr)
	}
	if w, failed := x.streamFailure(tr, &first, "stream failed at once"); failed {
		// A 200 stream may still fail in its first event (quota, rate limit, overload; limit.go).
		if v, reason := x.judgeEvent(tr, w); v != served {
			return v, reason
		}
		first.Raw = sse.AppendEvent(nil, first.Name, first.Data)
	}
	c.live(a.timeouts.StreamIdle)
	a.held, a.first = held, first
	if !x.req.stream {
		// The client gets the answer whole: read it to its end before answering, so that a
		// break anywhere in it still moves on.
		if a.final, err = collectFinal(a.rd, first, x.learnEventOf(m)); err != nil {
			return broke("the upstream stream ended before response.completed", err)
		}
		if v, reason := x.finalFails(tr, a); v != served {
			return v, reason
		}
		a.whole = true
	}
	return served, ""
}

// answer is an upstream answer attempt found fit to relay, waiting for respond.
type answer struct {
	tr       *accountTry // the try it answers: its account, wire and credential
	resp     *http.Response
	call     *call
	started  time.Time // when the attempt began
	timeouts Timeouts
	plain    []byte // a non-streamed answer, read whole
	// A streamed answer: the reader, the bookkeeping events held back and the first real
	// event (a copy of Raw is not needed: nothing was read after it); or, for a client that
	// wants the answer whole, its terminal event.
	rd    eventSource
	held  []sse.Event
	first sse.Event
	final sse.Event
	whole bool
}

func (a *answer) close() {
	if e, ok := a.rd.(*socketEvents); ok {
		e.abandon()
	}
	a.drain() // drain.go: the connection is reused
	a.resp.Body.Close()
	a.call.end()
}

// classifyStatus judges a non-2xx upstream answer (judge.go) and applies what it rests. An
// answer that is the client's own mistake is served: its body, redacted, comes back for
// respond to relay.
func (x *exchange) classifyStatus(tr *accountTry, resp *http.Response) (verdict, string, []byte) {
	// The upstream's text enters here: nothing of it goes further unredacted.
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	body = redact(body, tr.cred.Token)
	j := x.s.judgeFor(tr.m, saidHTTP(resp, body))
	x.s.rest(tr.m, tr.cred, tr.tg.model, j)
	v, reason := x.act(tr, j)
	if v == served {
		return served, reason, body // the client's own mistake
	}
	return v, reason, nil
}

// act is what the attempt does after a judgment: move on, retry, renew the credential, retry
// without sealed content, or relay.
func (x *exchange) act(tr *accountTry, j judgment) (verdict, string) {
	switch j.class {
	case limited, noModel, redirected:
		return nextAccount, j.reason
	case refused:
		return unauthorized, j.reason
	case flaky:
		return transient, j.reason
	case unsealed:
		if x.refused(tr.m, x.body.items) {
			return resealed, j.reason + " (sealed by another account: retried without it)"
		}
	}
	return served, j.reason
}

// judgeEvent judges a failure a stream said in its event w, unless the wire mends it itself (a
// socket at its time limit, fallback), and applies what it rests.
func (x *exchange) judgeEvent(tr *accountTry, w said) (verdict, string) {
	j := x.s.judgeFor(tr.m, w)
	if why, ok := tr.wire.renew(x, &j, nil); ok {
		return fallback, why
	}
	x.s.rest(tr.m, tr.cred, tr.tg.model, j)
	return x.act(tr, j)
}

// record adds the attempt on m that began at start to the trace.
func (x *exchange) record(m *member, start time.Time, status int, err string) {
	x.t.Attempts = append(x.t.Attempts, Attempt{Account: m.Name, Status: status, Error: err, Ms: stat.Ms(x.s.now().Sub(start))})
}

// maxEventBytes bounds one upstream SSE event (a response.completed event carries the whole output).
const maxEventBytes = 64 << 20

// maxHeld bounds how many leading bookkeeping events are held back while waiting for the
// first event that tells whether the stream will succeed.
const maxHeld = 8

// peekStream reads the leading events that carry no output (carriesNoOutput, and comments)
// and the first event after them. The held events are copies;
// comments past maxHeld are dropped rather than held (they carry nothing), so that a stream of
// keep-alives alone still waits for a real event.
func peekStream(rd eventSource) (held []sse.Event, first sse.Event, err error) {
	for {
		ev, err := rd.Next()
		if err != nil {
			return held, ev, err
		}
		bookkeeping := carriesNoOutput(ev)
		if len(ev.Data) == 0 && len(held) >= maxHeld {
			continue
		}
		if len(held) < maxHeld && (bookkeeping || len(ev.Data) == 0) {
			held = append(held, sse.Event{Raw: bytes.Clone(ev.Raw), Name: ev.Name, Data: bytes.Clone(ev.Data)})
			continue
		}
		return held, ev, nil
	}
}

// collectFinal reads an upstream Responses stream to its terminal event and returns a copy of
// it. An error means the stream ended or broke before one; seen, when set, sees each event on
// the way.
func collectFinal(rd eventSource, first sse.Event, seen func(sse.Event)) (sse.Event, error) {
	ev := first
	var err error
	for {
		if seen != nil {
			seen(ev)
		}
		if isTerminalEvent(ev.Name) {
			break
		}
		if ev, err = rd.Next(); err != nil {
			return sse.Event{}, err
		}
	}
	return sse.Event{Name: ev.Name, Data: bytes.Clone(ev.Data)}, nil
}

func isEventStream(h http.Header) bool {
	return strings.HasPrefix(strings.ToLower(h.Get("Content-Type")), "text/event-stream")
}

func isFailureEvent(name string) bool { return name == "response.failed" || name == "error" }

func isTerminalEvent(name string) bool {
	switch name {
	case "response.completed", "response.failed", "response.incomplete", "error":
		return true
	}
	return false
}
