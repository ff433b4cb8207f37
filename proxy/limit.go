package proxy

import (
	"encoding/json"

	"github.com/codexrelay/codexrelay/proxy/pool"
	"github.com/codexrelay/codexrelay/proxy/sse"
)

// Usage limits inside a 200 stream. An upstream says "this account is at its limit" in more
// shapes than a failure event first: a response.incomplete or a response.completed whose
// response failed, a failure after an empty reasoning item, events with no `event:` line. Any
// of them before output reached the client moves the request to the next account and rests
// this one (await); one after output cannot move the request, but still rests the account
// (respond), so that the next request goes elsewhere.

// namedEvents names each data-only event (no `event:` line) by its data's type, so that what
// the relay reads of a stream (bookkeeping, failure, terminal event) does not depend on the
// upstream naming its events. The bytes relayed are the upstream's.
type namedEvents struct{ eventSource }

func (n namedEvents) Next() (sse.Event, error) {
	ev, err := n.eventSource.Next()
	if err == nil && ev.Name == "" && len(ev.Data) > 0 {
		ev.Name = eventType(ev.Data)
	}
	return ev, err
}

// carriesNoOutput reports whether ev is an event a stream begins with that carries nothing of
// the answer yet (peekStream holds it back until one that does): the response's creation and
// progress, its metadata (a turn state, a model reroute), and a reasoning item announced empty.
func carriesNoOutput(ev sse.Event) bool {
	switch ev.Name {
	case "response.created", "response.in_progress", "response.metadata", rateLimitsEventName:
		return true
	case "response.output_item.added":
		var v struct {
			Item struct {
				Type    string            `json:"type"`
				Summary []json.RawMessage `json:"summary"`
				Content []json.RawMessage `json:"content"`
			} `json:"item"`
		}
		return json.Unmarshal(ev.Data, &v) == nil && v.Item.Type == "reasoning" && len(v.Item.Summary) == 0 && len(v.Item.Content) == 0
	}
	return false
}

// streamFailure reads a failure from a stream's event: a failure event (the wire's own test),
// or a terminal event whose response failed or stopped for a limit; where says where it came
// (for the reason). The event's data is redacted in place when it is one; ok is false for any
// other event.
func (x *exchange) streamFailure(tr *accountTry, ev *sse.Event, where string) (w pool.Said, ok bool) {
	if !tr.wire.firstFails(*ev) && !terminalFailed(ev.Name, ev.Data) {
		return pool.Said{}, false
	}
	ev.Data = redact(ev.Data, tr.cred.Token)
	w = pool.SaidEvent(where, ev.Data)
	if tr.wire.firstFails(*ev) {
		w.Code = pool.ParseErrorBody(ev.Data).Code // a failure event's code is its own, not its response's incomplete reason
	}
	return w, true
}

// terminalFailed reports whether a response.completed or response.incomplete event says the
// response failed: its status is failed, it carries an error, or it stopped for a limit (an
// incomplete answer for another reason, max_output_tokens say, is an answer).
func terminalFailed(name string, data []byte) bool {
	if name != "response.completed" && name != "response.incomplete" {
		return false
	}
	var v struct {
		Response struct {
			Status string          `json:"status"`
			Error  json.RawMessage `json:"error"`
		} `json:"response"`
	}
	if json.Unmarshal(data, &v) != nil {
		return false
	}
	hasError := len(v.Response.Error) > 0 && string(v.Response.Error) != "null"
	cl, _ := pool.CodeClass(pool.IncompleteReason(data))
	return v.Response.Status == "failed" || hasError || cl == pool.Limited
}

// restIfLimited rests the account serving a (or its workspace) when a terminal event relayed
// after output says it is at its limit: the answer has begun and cannot move, the next request
// can.
func (x *exchange) restIfLimited(a *answer, name string, data []byte) {
	if !isFailureEvent(name) && !terminalFailed(name, data) {
		return
	}
	m := a.tr.m
	if j := x.s.pool.Judge(m, pool.SaidEvent("limit reached after output", redact(data, a.tr.cred.Token))); j.Class == pool.Limited {
		x.s.pool.Rest(m, a.tr.cred, a.tr.tg.model, j)
	}
}
