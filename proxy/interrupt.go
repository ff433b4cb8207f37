package proxy

import (
	"bytes"
	"context"
	"errors"
	"time"

	"github.com/coder/websocket"

	"github.com/codexrelay/codexrelay/proxy/bridge"
	"github.com/codexrelay/codexrelay/proxy/payload"
)

// Control frames of the Responses WebSocket mode: they act on the response being generated
// rather than start one, so the relay acts on them as they are read, not after the turn.
//
//   - {"type":"response.interrupt","response_id":"...","mode":"discard_partial_items"}: the
//     running turn stops at once: its upstream request is cancelled (an HTTP request ends, an
//     upstream socket is closed), so that the account stops generating and spending, nothing
//     more of it reaches the client, and the turn ends with response.incomplete (reason
//     "interrupted") carrying the response id, which Codex 0.171 takes as the interruption's
//     acknowledgement and continues the conversation from (its next turn's
//     previous_response_id): the conversation keeps the response, without its partial output.
//     The trace says "interrupted by the client".
//   - response.steer and response.inject carry input for the running response: they go as
//     they came to the account's socket the turn runs on; a turn the relay serves over HTTP
//     has nowhere to take them, and the client is told so once the turn has ended.
//
// An interrupt that comes when no turn runs (it crossed the turn's end) is ignored.
//
// Codex 0.171, as captured (testdata/codex-0.171/ws-interrupt), sends response.interrupt on Esc
// for a turn that has streamed a while, and closes its socket for one Esc'd within seconds:
// the relay's reader sees the close and cancels the turn the same way (serve).

const (
	frameInterrupt = "response.interrupt"
	frameSteer     = "response.steer"
	frameInject    = "response.inject"
)

// maxControlFrame bounds the frames looked at as control frames (a steer carries input, an
// interrupt a few ids); a larger frame is a turn.
const maxControlFrame = 1 << 20

// errTurnInterrupted: the client interrupted the turn; nothing more of it is relayed.
var errTurnInterrupted = errors.New("the client interrupted the turn")

// control acts on f if it is a control frame for the running turn, and reports whether it
// did (the frame is then answered: nothing is queued). It runs on the connection's reader.
func (sc *socketConn) control(f frame) bool {
	if f.typ != websocket.MessageText || len(f.data) > maxControlFrame || !bytes.Contains(f.data, []byte(`"response.`)) {
		return false
	}
	t := sc.running.Load()
	if t == nil || t.ended.Load() {
		return false // between turns: handle answers it in order
	}
	obj, err := payload.Parse(f.data)
	if err != nil {
		return false
	}
	typ, _ := stringMember(obj, "type")
	switch typ {
	case frameInterrupt:
		if t.interrupted.CompareAndSwap(false, true) {
			// The frame's response_id is the client's word: the turn's id is the upstream's
			// (or, before its first event, the relay's: interrupted).
			t.stop()
			if up := t.upstream.Load(); up != nil {
				// The account stops generating now, whatever the turn is waiting on; the next
				// turn opens a new socket (a closed one is retried on a new one: socketwire.go).
				up.CloseNow()
			}
			sc.s.log.Info("turn interrupted by the client", "response", t.responseID())
		}
		return true
	case frameSteer, frameInject:
		up := t.upstream.Load()
		if up == nil {
			return false // served over HTTP: answered after the turn (handle)
		}
		ctx, cancel := context.WithTimeout(sc.ctx, 10*time.Second)
		defer cancel()
		if err := up.Write(ctx, websocket.MessageText, f.data); err != nil {
			sc.s.log.Info("a "+typ+" could not reach the upstream socket", "error", err.Error())
		}
		return true
	}
	return false
}

// responseID is the id of the response the turn relays, "" while none is known.
func (t *socketTurn) responseID() string {
	if p := t.respID.Load(); p != nil {
		return *p
	}
	return ""
}

// interrupted ends a turn the client interrupted: the trace says so, and the client gets the
// turn's terminal event, response.incomplete with reason "interrupted".
func (x *exchange) interrupted(w *socketWriter) {
	t := x.via.turn
	x.t.Outcome, x.t.Status = OutcomeCanceled, 499
	x.t.Error = "interrupted by the client (response.interrupt)"
	if w.err != nil || t.terminal || x.via.turn.sc.ctx.Err() != nil {
		return
	}
	// The response whole, as the API ends an interrupted one; named by the relay when the
	// interrupt came before the upstream named it.
	r := x.madeResponse(t.responseID(), "incomplete")
	r.IncompleteReason = "interrupted"
	t.ended.Store(true) // before the client can answer it
	if w.sc.send(bridge.ResponseEvent("response.incomplete", w.events, r)) {
		// Codex continues the conversation from the interrupted response (its next turn names
		// it in previous_response_id: testdata/codex-0.171/ws-interrupt): the conversation
		// keeps it, its partial output discarded (mode discard_partial_items).
		t.terminal, t.completedID, t.output = true, r.ID, nil
	}
}
