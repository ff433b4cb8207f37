package proxy

import (
	"encoding/json"

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
	case "response.created", "response.in_progress", "response.metadata":
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
// or a terminal event whose response failed or stopped for a limit. The event's data is
// redacted in place when it is one; ok is false for any other event.
func (x *exchange) streamFailure(tr *accountTry, ev *sse.Event) (code, msg string, resetsAt int64, ok bool) {
	if tr.wire.firstFails(*ev) {
		ev.Data = redact(ev.Data, tr.cred.Token)
		code, msg, resetsAt = parseUpstreamError(ev.Data)
		return code, msg, resetsAt, true
	}
	if !terminalFailed(ev.Name, ev.Data) {
		return "", "", 0, false
	}
	ev.Data = redact(ev.Data, tr.cred.Token)
	code, msg, resetsAt = parseUpstreamError(ev.Data)
	if code == "" {
		code = incompleteReason(ev.Data)
	}
	return code, msg, resetsAt, true
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
	return v.Response.Status == "failed" || hasError || classify(incompleteReason(data)) == errQuota
}

// incompleteReason is a terminal event's response.incomplete_details.reason ("": none).
func incompleteReason(data []byte) string {
	var v struct {
		Response struct {
			IncompleteDetails struct {
				Reason string `json:"reason"`
			} `json:"incomplete_details"`
		} `json:"response"`
	}
	json.Unmarshal(data, &v)
	return v.Response.IncompleteDetails.Reason
}

// finalFails classifies the terminal event of an answer read whole (the client asked for no
// stream): nothing of it reached the client, so a limit or an overload anywhere in it, after
// output items included, moves the request on like one at the start.
func (x *exchange) finalFails(tr *accountTry, a *answer) (verdict, string) {
	code, msg, resetsAt, ok := x.streamFailure(tr, &a.final)
	if !ok {
		return served, ""
	}
	return x.classifyCode(tr, code, msg, resetsAt)
}

// restIfLimited rests the account serving a when a terminal event relayed after output says it
// is at its limit: the answer has begun and cannot move, the next request can.
func (x *exchange) restIfLimited(a *answer, name string, data []byte) {
	m := a.tr.m
	if !isFailureEvent(name) && !terminalFailed(name, data) {
		return
	}
	code, msg, resetsAt := parseUpstreamError(redact(data, a.tr.cred.Token))
	if code == "" {
		code = incompleteReason(data)
	}
	if classify(code) != errQuota {
		return
	}
	now := x.s.now()
	if t := m.quotaReset(now); resetsAt == 0 && !t.IsZero() {
		resetsAt = t.Unix()
	}
	reason := "limit reached after output: " + code
	if msg != "" {
		reason += ": " + truncate(msg, 200)
	}
	m.coolDown(cooldownEnd(now, "", resetsAt), reason)
}
