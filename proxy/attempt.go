package proxy

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/codexrelay/codexrelay/proxy/internal/stat"
	"github.com/codexrelay/codexrelay/proxy/pool"
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
	m.CountRequest()
	if v, why := x.remakeCompactions(m, tg); v != served {
		return x.failed(m, v, why, "")
	}
	tr := x.newTry(m, tg)
	for n := 0; n < 2; n++ {
		if tr.err != nil {
			return x.untranslatable(tr)
		}
		if n > 0 && !x.backoff() {
			return false, failure{reason: "client went away"}
		}
		v, why, a := x.call(tr)
		switch v {
		case served:
			x.t.Account = m.Name
			if a.resp.StatusCode/100 != 2 {
				x.t.Error = why // the client's own mistake: respond relays it
			}
			x.respond(a)
			x.keepSession(m)
			return true, failure{}
		case fallback:
			// Not the account's failure: the same account again, on a new socket or over HTTP.
			tr = x.newTry(m, tg)
			n--
			continue
		case resealed:
			// Not the account's failure either: the same account without the sealed items it
			// could not read (once), a compaction among them re-made on it first.
			if rv, rwhy := x.remakeCompactions(m, tg); rv != served {
				return x.failed(m, rv, rwhy, "")
			}
			tr = x.newTry(m, tg)
			n--
			continue
		case transient, timedOut:
			if x.r.Context().Err() != nil {
				return false, failure{reason: "client went away"}
			}
			m.CountFailure()
			if x.s.pool.Fail(m, v == timedOut, why) || v == timedOut {
				return false, failure{reason: why}
			}
			f.reason = why // once more on the same account
			continue
		}
		return x.failed(m, v, why, tr.storeErr)
	}
	return false, f
}

// failed ends m's tries for verdict v (why): busy is the relay's matter, any other m's failure;
// a transient failure or a timeout counts for the breaker.
func (x *exchange) failed(m *member, v verdict, why, storeErr string) (bool, failure) {
	if v == busy {
		x.reject(x.relayBusy(), OutcomeError) // no room to hold it: the relay's matter
		return true, failure{}
	}
	m.CountFailure()
	if v == transient || v == timedOut {
		x.s.pool.Fail(m, v == timedOut, why)
	}
	return false, failure{reason: why, storeErr: storeErr}
}

// untranslatable ends the tries of a try whose body could not be built: for want of room in
// the memory budget or a client that left (the relay's matter, no other account fares better),
// or because the request cannot be said to the account.
func (x *exchange) untranslatable(tr *accountTry) (bool, failure) {
	if ae, ok := tr.err.(*apiError); ok && (ae.Code == "relay_busy" || ae.Status == 499) {
		x.reject(ae, OutcomeError)
		return true, failure{}
	}
	return false, failure{reason: "cannot translate the request for this account: " + tr.err.Error(), untranslatable: tr.err}
}

// backoff waits before a try again on the same account; false when the client went away.
func (x *exchange) backoff() bool {
	t := time.NewTimer(x.s.opt.RetryBackoff)
	defer t.Stop()
	select {
	case <-x.r.Context().Done():
		return false
	case <-t.C:
		return true
	}
}

// keepSession records that m served the request: only an account that produced an answer
// keeps the session.
func (x *exchange) keepSession(m *member) {
	if x.t.Status >= 400 {
		return
	}
	x.s.pool.Served(m, x.req.session)
	k := m.Key()
	x.s.lastServed.Store(&k)
}

// call makes the try through the pool (pool.Call: the account's credential, one renewal when
// the upstream refuses it, the judgment of what the upstream said and what that rests): the
// send (attempt) and, for a 2xx answer, the wait for what tells whether it can be relayed
// (await). Each send is one attempt in the trace. Served means respond may relay a.
func (x *exchange) call(tr *accountTry) (v verdict, why string, a *answer) {
	var start time.Time
	var said *pool.Said
	first := true
	out := x.s.pool.Call(x.r.Context(), tr.m, tr.tg.model, func(cred Credential) *pool.Said {
		if !first { // the upstream refused the credential; it was renewed: the same try again
			x.finish(tr, a, start, nextAccount, said.Reason())
		}
		first, tr.cred, start = false, cred, x.s.now()
		if x.times.firstSend.IsZero() {
			x.times.firstSend = start
		}
		v, why, a, said = x.attempt(tr)
		if said == nil && v == served && a.resp.StatusCode/100 == 2 {
			v, why, said = x.await(tr, a) // a 2xx answer: is it one to relay?
		}
		return said
	})
	switch {
	case out.Err != nil:
		why = "credential unavailable: " + out.Err.Error()
		if out.StoreDown {
			tr.storeErr = out.Err.Error()
		}
		x.record(tr.m, x.s.now(), 0, why)
		return nextAccount, why, nil
	case out.Judgment != nil:
		v, why = x.act(tr, *out.Judgment)
		if v == served && a.resp.StatusCode/100 == 2 {
			v, why = x.awaitOn(tr, a, said) // the client's own failure, in a stream: relayed as it goes
		}
	}
	x.finish(tr, a, start, v, why)
	return v, why, a
}

// finish records the attempt on tr's account that began at start and ended with v (why), and
// closes its answer unless it is to be relayed.
func (x *exchange) finish(tr *accountTry, a *answer, start time.Time, v verdict, why string) {
	status := 0
	if a != nil {
		status = a.resp.StatusCode
	}
	if v == fallback && why == "" {
		return // the wire could not reach the account: no attempt was made
	}
	x.record(tr.m, start, status, why)
	switch {
	case a == nil:
	case v != served:
		a.close()
	case status/100 == 2:
		x.t.LatencyBreakdown.UpstreamHeadersMs = stat.Ms(x.s.now().Sub(x.times.firstSend))
	}
}

// attempt sends the try's body to its account once and reads the answer's status: an error
// answer is read whole (redacted where it enters) and comes back with what it said, for the
// pool to judge; a 2xx one comes back for await to look at. No answer (a transport error) is
// transient, or timedOut when no headers came in time.
//
// The request's phases run one after the other from tryAccount (attempt, await, respond), not
// nested: net/http's first write of the answer's headers needs a deep stack, and a handler
// goroutine whose stack once grew keeps the larger size for the rest of the stream, which
// under load is a quarter of the relay's memory.
func (x *exchange) attempt(tr *accountTry) (verdict, string, *answer, *pool.Said) {
	start := x.s.now()
	tmo := x.s.Timeouts()
	out, err := tr.wire.send(x, tr, tmo)
	x.t.UpstreamBytes += int64(out.bytes)
	if errors.Is(err, errNoSocket) {
		return fallback, "", nil, nil // the wire cannot reach m: the same account by another
	}
	resp, c := out.resp, out.call
	if err != nil {
		reason := describeTransportError(err, tr.cred.Token)
		if errors.Is(err, errHeaderTimeout) {
			return timedOut, reason, nil, nil
		}
		return transient, reason, nil, nil
	}
	x.s.learnTurnState(tr.m, resp.Header)
	a := &answer{tr: tr, resp: resp, call: c, rd: out.events, started: start, timeouts: tmo}
	if resp.StatusCode/100 != 2 {
		// The upstream's text enters here: nothing of it goes further unredacted.
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		a.plain = redact(body, tr.cred.Token)
		w := pool.SaidHTTP(resp, a.plain)
		return served, w.Reason(), a, &w
	}
	return served, "", a, nil
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
// event, a break, an empty stream, a timeout) moves the request on. A failure the stream says
// comes back for the pool to judge (awaitOn goes on when it is the client's own).
func (x *exchange) await(tr *accountTry, a *answer) (verdict, string, *pool.Said) {
	c := a.call
	if tr.wire.document {
		// A backend call's answer is relayed as it comes (relayDocument), not held.
		c.live(a.timeouts.StreamIdle)
		return served, "", nil
	}
	if a.rd == nil && !isEventStream(a.resp.Header) {
		// A plain answer is read whole before any of it is relayed, within the relay's
		// memory budget.
		c.live(a.timeouts.StreamIdle)
		var err error
		if a.plain, err = x.readWhole(c.body(a.resp.Body), a.resp.ContentLength, maxEventBytes); err != nil {
			if errors.Is(err, errRelayBusy) {
				return busy, "no room in the relay's memory budget for the answer", nil
			}
			v, why := x.broke(a, "the upstream answer broke off", err)
			return v, why, nil
		}
		return served, "", nil
	}
	c.arm(a.timeouts.FirstEvent, errFirstEventTimeout)
	if a.rd == nil {
		a.rd = namedEvents{sse.NewReader(c.body(a.resp.Body), maxEventBytes)}
	}
	held, first, ferr := peekStream(a.rd)
	for _, ev := range held {
		x.learnEvent(tr.m, ev.Name, ev.Data) // a turn state m issues before its first output
	}
	if ferr != nil {
		what := "the upstream stream ended before its first event"
		if len(held) > 0 {
			what = "the upstream stream ended after " + held[len(held)-1].Name + ", before its first output"
		}
		v, why := x.broke(a, what, ferr)
		return v, why, nil
	}
	a.held, a.first = held, first
	if w, failed := x.streamFailure(tr, &a.first, "stream failed at once"); failed {
		// A 200 stream may still fail in its first event (quota, rate limit, overload; limit.go).
		w.Bucket = pool.ActiveLimit(a.resp.Header)
		return served, w.Reason(), &w
	}
	return x.awaitRest(tr, a)
}

// awaitOn goes on with an answer whose stream said a failure the pool judged the client's own
// (said): it is relayed as it came, its first event redacted, or, for a client that gets the
// answer whole, read to its end.
func (x *exchange) awaitOn(tr *accountTry, a *answer, said *pool.Said) (verdict, string) {
	if a.whole || a.final.Name != "" {
		a.whole = true // the failure was the whole answer's terminal event
		return served, said.Reason()
	}
	a.first.Raw = sse.AppendEvent(nil, a.first.Name, a.first.Data)
	v, why, _ := x.awaitRest(tr, a)
	if a.final.Name != "" && v == served {
		a.whole = true // its terminal event says the same failure (or less): relayed
	}
	return v, why
}

// awaitRest reads on from a stream's first real event: nothing more for a client that streams,
// the whole answer for one that gets it whole (its terminal event judged as the first was).
func (x *exchange) awaitRest(tr *accountTry, a *answer) (verdict, string, *pool.Said) {
	a.call.live(a.timeouts.StreamIdle)
	if x.req.stream {
		return served, "", nil
	}
	// The client gets the answer whole: read it to its end before answering, so that a break
	// anywhere in it still moves on.
	final, err := collectFinal(a.rd, a.first, x.learnEventOf(tr.m))
	if err != nil {
		v, why := x.broke(a, "the upstream stream ended before response.completed", err)
		return v, why, nil
	}
	a.final = final
	if w, failed := x.streamFailure(tr, &a.final, "stream failed at once"); failed {
		w.Bucket = pool.ActiveLimit(a.resp.Header)
		return served, w.Reason(), &w // a limit or an overload anywhere in it moves it on
	}
	a.whole = true
	return served, "", nil
}

// broke is the verdict on a 2xx answer that broke off (what) with err before it could be
// relayed: the wire's own matter when it mends it (a socket the upstream closed), a timeout,
// or a transient failure.
func (x *exchange) broke(a *answer, what string, err error) (verdict, string) {
	tr := a.tr
	err = a.call.explain(err)
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

// act is what the attempt does after the pool's judgment: move on, retry, retry without
// sealed content, or relay (the pool renewed a refused credential already).
func (x *exchange) act(tr *accountTry, j pool.Judgment) (verdict, string) {
	if why, ok := tr.wire.renew(x, &j, nil); ok {
		return fallback, why // the wire mends it itself: a socket at its time limit, say
	}
	switch j.Class {
	case pool.Limited, pool.NoModel, pool.Redirected:
		return nextAccount, j.Reason
	case pool.Refused:
		return unauthorized, j.Reason
	case pool.Flaky:
		return transient, j.Reason
	case pool.Unsealed:
		if x.refused(tr.m, x.body.items) {
			return resealed, j.Reason + " (sealed by another account: retried without it)"
		}
	}
	return served, j.Reason
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
