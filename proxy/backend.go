package proxy

import (
	"cmp"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/codexrelay/codexrelay/proxy/payload"
)

// Backend calls: what Codex asks of the ChatGPT backend itself, not of a model. Code mode's
// web namespace (web.run) posts a search to {base}/alpha/search, and image_gen.imagegen posts
// to {base}/images/generations or /images/edits (an edit carries its images inline as data
// URLs). Codex 0.171 sends them to its provider's base_url when the provider block says
// supports_standalone_web_search (search) and requires_openai_auth with a ChatGPT sign-in
// (images): app/codex.go writes both. The relay sends the client's body as it came to a
// healthy ChatGPT account, the account that serves the conversation first, and moves to the
// next one on a limit, a refused credential or an outage before any byte reached the client,
// as a model request does. The answer (one JSON document) is relayed as it came.
//
// Only ChatGPT accounts serve these: an API key's upstream has no search of this shape, and
// its Images API is billed per image rather than from the plan.

// Backend call routes (Trace.Route).
const (
	RouteSearch = "search"
	RouteImages = "images"
)

// serveBackend serves one backend call (path, e.g. /alpha/search) by the same dispatch and
// rotation as a model request (route.go, attempt.go), over the document wire (wire.go), to the
// pool's ChatGPT accounts. Its body goes as it came: it is read whole, not validated as it
// arrives.
func (x *exchange) serveBackend(path string) {
	parse := func(body []byte) (*clientRequest, *apiError) {
		obj, err := payload.Parse(body)
		if err != nil {
			return nil, errInvalid("invalid_json", "", "the request body is not a JSON object")
		}
		return &clientRequest{route: routeDocument, obj: obj, path: path, model: backendModel(obj),
			session: turnThread(x.r.Header.Get("X-Codex-Turn-Metadata"))}, nil
	}
	if x.admitBody(parse, false) {
		x.prepared()
		x.dispatch(&plan{targets: []target{{model: x.req.model}}, accounts: isChatGPT})
	}
}

func isChatGPT(m *member) bool { return m.Kind == KindChatGPT }

// documentBody is the document wire's body: the client's as it came.
func documentBody(x *exchange, _ *accountTry) (builtBody, error) {
	w := x.body.whole()
	return builtBody{b: w.raw, buf: w.buf}, nil
}

// relayDocument relays a backend call's 2xx answer as it comes (an image comes back as
// megabytes of base64, which the relay does not hold: memory.go), with the account's own
// credential masked wherever it appears and nothing else looked for in it; an error answer was
// read and redacted whole where it entered (classifyStatus).
func (x *exchange) relayDocument(a *answer) {
	h := x.w.Header()
	x.relayHeaders(h, a.resp.Header)
	h.Set("Content-Type", cmp.Or(a.resp.Header.Get("Content-Type"), "application/json"))
	x.w.WriteHeader(a.resp.StatusCode)
	x.t.Status = a.resp.StatusCode
	mw := newMaskWriter(x.w, a.tr.cred.Token)
	_, err := io.Copy(mw, a.call.body(a.resp.Body))
	if err == nil {
		err = mw.Close()
	}
	x.t.Bytes = mw.n
	if err != nil {
		x.t.Error = "the answer broke off: " + describeTransportError(a.call.explain(err), a.tr.cred.Token)
		x.t.Outcome = OutcomeInterrupted
		return
	}
	x.t.Outcome = OutcomeCompleted
}

// documentFailed answers a backend call that no ChatGPT account served: the failures, and
// what the pool can do (noBackendAccount).
func (x *exchange) documentFailed(tl *tally) {
	failures := "every ChatGPT account failed this " + x.t.Route + ": " + strings.Join(tl.failures, "; ")
	if tl.tried == 0 || !x.s.pool.AnyUsable("", x.s.now(), isChatGPT) {
		e := x.noBackendAccount()
		if tl.tried > 0 {
			e.Message = failures + ". " + e.Message
		}
		x.reject(e, OutcomeError)
		return
	}
	x.reject(&apiError{Status: http.StatusBadGateway, Type: "server_error", Code: "upstream_error", Message: failures}, OutcomeError)
}

// noBackendAccount is the answer when no ChatGPT account can take a backend call now.
func (x *exchange) noBackendAccount() *apiError {
	what := map[string]string{RouteSearch: "Web search", RouteImages: "Image generation"}[x.t.Route]
	return x.s.unavailable(x.s.pool.Unavailable("", x.s.now(), isChatGPT), what)
}

// backendModel is the model a backend call names ("" for none).
func backendModel(obj *payload.Object) string {
	m, _ := stringMember(obj, "model")
	return truncate(m, maxModelName)
}

// turnThread is the thread id of Codex's x-codex-turn-metadata: the conversation a backend
// call belongs to, whose account is tried first.
func turnThread(meta string) string {
	if meta == "" || len(meta) > 64<<10 {
		return ""
	}
	var v struct {
		ThreadID string `json:"thread_id"`
	}
	json.Unmarshal([]byte(meta), &v)
	return truncate(v.ThreadID, 256)
}

// backendHeaders are the client's headers that go with a backend call, by the rule model
// requests follow (turn.go): the turn's metadata, the image turn id and the like.
func (x *exchange) backendHeaders() http.Header {
	h := http.Header{}
	conn := x.r.Header.Get("Connection")
	for k, v := range x.r.Header {
		if forwarded(k, conn) {
			h[k] = v
		}
	}
	return h
}
