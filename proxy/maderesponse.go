package proxy

import (
	"crypto/rand"
	"encoding/hex"

	"github.com/codexrelay/codexrelay/proxy/bridge"
)

// Responses the relay writes itself: a Responses client's answer from a Chat Completions account
// (the bridge makes it), and the end the relay gives a response no upstream ended (a stream that
// broke off, a turn the client interrupted, a WebSocket warm-up). Each is a whole Response object,
// as the API writes it (bridge.Response): its state, and the request's parameters as the API
// echoes them (bridge.Echo, read once from the request's top-level members; never its input).

// runID tells the responses the relay makes in one run from another run's: they are named
// resp_<run>_<trace id>, and trace ids start again at each run, so that an id a client kept from
// an earlier run names no response of this one (served.go replays a response by its id).
var runID = func() string {
	var b [6]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}()

// madeResponseID is the id of the response the relay makes for the request.
func (x *exchange) madeResponseID() string { return "resp_" + runID + "_" + x.t.ID }

// echo is what a Response the relay writes for the request repeats of it.
func (x *exchange) echo() *bridge.Echo {
	if x.req == nil || x.req.obj == nil {
		return nil
	}
	return bridge.NewEcho(x.req.obj.Get)
}

// madeResponse is a Response the relay writes for the request (id "": one of its own making),
// in status, with no output.
func (x *exchange) madeResponse(id, status string) *bridge.Response {
	if id == "" {
		id = x.madeResponseID()
	}
	model := ""
	if x.req != nil {
		model = x.req.model
	}
	r := &bridge.Response{ID: id, Model: model, CreatedAt: x.times.start.Unix(), Status: status, Echo: x.echo()}
	if status == "completed" {
		r.CompletedAt = max(x.s.now().Unix(), r.CreatedAt)
	}
	return r
}
