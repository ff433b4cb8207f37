package proxy

import (
	"net/http"
	"strings"
)

// The proxy's routes, as one table: a row a route, saying who may call it, whether it spends
// the pool's accounts, and what it is. The mux is made of it (routes), the guard reads the row a
// request matched (guard), the unknown_route answer lists it, and docs/http-routes.md is held
// to it by a test. A route that spends the pool cannot be opened without the local key: routes
// refuses such a row.
//
// A new route under /backend-api/ is a row here with its access (signIn: Codex's own ChatGPT
// sign-in, which the ChatGPT backend checks) and its handler; anything under /backend-api/ that
// has no row of its own goes to the ChatGPT backend as it came (passThrough, chatgptapi.go).

// access says who may call a route.
type access int

const (
	// localKey: the relay's local key, when one is set (a bearer token or X-Api-Key), or the
	// signature of the relay's own programs (instanceauth.go).
	localKey access = iota
	// signIn: Codex's own ChatGPT sign-in, never the local key (which is taken off the request:
	// it goes to chatgpt.com); the ChatGPT backend checks it, and nothing of the pool is
	// answered before it accepted it.
	signIn
	// anyone on loopback (the browser guards still apply): it says nothing of the accounts.
	loopback
)

func (a access) String() string {
	return [...]string{"local key", "Codex's ChatGPT sign-in", "anyone on loopback"}[a]
}

// routeRow is one route of the proxy.
type routeRow struct {
	methods []string // nil: any method
	path    string   // a ServeMux path ("{id...}" a wildcard; a trailing "/" a subtree)
	v1      bool     // served under /v1 too (/v1 + path)
	access  access
	spends  bool // it sends requests to the pool's accounts
	paused  bool // a paused relay answers it 503 relay_paused
	doc     string
	// route names the trace of each of its requests (Trace.Route), whose exchange the front
	// door (begin) opens; "" for a route that makes no exchange.
	route   string
	handler func(s *Server, row *routeRow, path string) http.Handler
}

// handle is a route that makes no exchange of its requests.
func handle(f func(*Server, http.ResponseWriter, *http.Request)) func(*Server, *routeRow, string) http.Handler {
	return func(s *Server, _ *routeRow, _ string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { f(s, w, r) })
	}
}

// exchanges is a route whose every request is an exchange: the front door (begin) opens it,
// its trace named by the row, and serve serves it (path: the route's path, without /v1).
func exchanges(serve func(x *exchange, path string)) func(*Server, *routeRow, string) http.Handler {
	return func(s *Server, row *routeRow, path string) http.Handler {
		path = strings.TrimPrefix(path, "/v1")
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			x := s.begin(w, r, row)
			defer x.end()
			serve(x, path)
		})
	}
}

// passthroughMethods are the methods Codex sends its ChatGPT origin with.
var passthroughMethods = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

// routeTable is every route the proxy serves.
var routeTable = []routeRow{
	{methods: []string{"POST"}, path: "/responses", v1: true, access: localKey, spends: true, paused: true,
		doc: "the Responses API, streamed (SSE) or whole", route: routeResponses, handler: exchanges((*exchange).serveModel)},
	{methods: []string{"GET"}, path: "/responses", v1: true, access: localKey, spends: true, paused: true,
		doc: "the Responses API over a WebSocket", route: routeResponses, handler: socketRoute},
	{methods: []string{"POST"}, path: "/responses/compact", v1: true, access: localKey, spends: true, paused: true,
		doc: "compaction v1, answered whole", route: routeCompact, handler: exchanges((*exchange).serveModel)},
	{methods: []string{"POST"}, path: "/chat/completions", v1: true, access: localKey, spends: true, paused: true,
		doc: "the Chat Completions API, streamed (SSE) or whole", route: routeChat, handler: exchanges((*exchange).serveModel)},
	{methods: []string{"GET"}, path: "/models", v1: true, access: localKey, paused: true,
		doc: "the model catalog: the OpenAI list and Codex's shape in one body", handler: handle((*Server).handleModels)},
	{methods: []string{"GET"}, path: "/models/{id...}", v1: true, access: localKey, paused: true,
		doc: "one model of the catalog", handler: handle((*Server).handleModel)},
	{methods: []string{"POST"}, path: "/alpha/search", v1: true, access: localKey, spends: true, paused: true,
		doc: "Codex's web search, to a ChatGPT account", route: RouteSearch, handler: exchanges((*exchange).serveBackend)},
	{methods: []string{"POST"}, path: "/images/generations", v1: true, access: localKey, spends: true, paused: true,
		doc: "Codex's image generation, to a ChatGPT account", route: RouteImages, handler: exchanges((*exchange).serveBackend)},
	{methods: []string{"POST"}, path: "/images/edits", v1: true, access: localKey, spends: true, paused: true,
		doc: "Codex's image edits, to a ChatGPT account", route: RouteImages, handler: exchanges((*exchange).serveBackend)},
	{methods: []string{"GET"}, path: chatgptPrefix + "wham/usage", access: signIn, paused: true,
		doc: "Codex's usage read (/status): the user's own, with the pool's windows over it", route: RouteChatGPT, handler: exchanges((*exchange).servePoolUsage)},
	{methods: []string{"GET"}, path: chatgptPrefix + "wham/accounts/check", access: signIn, paused: true,
		doc: "Codex's workspace discovery, answered from the request alone", route: RouteChatGPT, handler: exchanges((*exchange).serveAccountsCheck)},
	{methods: passthroughMethods, path: chatgptPrefix, access: signIn, paused: true,
		doc:   "Codex's other ChatGPT calls (plugins, settings, analytics), to the ChatGPT backend as they came",
		route: RouteChatGPT, handler: exchanges((*exchange).passThrough)},
	{methods: []string{"GET"}, path: "/health", access: loopback,
		doc: "liveness", handler: handle((*Server).handleHealth)},
	{methods: []string{"GET"}, path: "/metrics", access: localKey,
		doc: "Prometheus text", handler: handle((*Server).handleMetrics)},
	{path: "/relay/", access: localKey,
		doc: "the local API (app/localapi/routes.go)", handler: func(s *Server, _ *routeRow, _ string) http.Handler { return s.localAPI() }},
	{path: "/relay", access: localKey,
		doc: "the local API", handler: func(s *Server, _ *routeRow, _ string) http.Handler { return s.localAPI() }},
	{path: "/", access: localKey, paused: true,
		doc: "anything else: 404 unknown_route, naming what is served", route: RouteUnserved, handler: exchanges((*exchange).serveUnknown)},
}

// routes makes the mux of the route table, and the row each of its patterns is.
func (s *Server) routes() {
	mux := http.NewServeMux()
	s.rows = map[string]*routeRow{}
	for i := range routeTable {
		row := &routeTable[i]
		if row.spends && row.access != localKey {
			panic("proxy: route " + row.path + " spends the pool and must take the local key")
		}
		paths := []string{row.path}
		if row.v1 {
			paths = append(paths, "/v1"+row.path)
		}
		for _, p := range paths {
			h := row.handler(s, row, p)
			methods := row.methods
			if methods == nil {
				methods = []string{""}
			}
			for _, m := range methods {
				pattern := strings.TrimSpace(m + " " + p)
				mux.Handle(pattern, h)
				s.rows[pattern] = row
			}
		}
	}
	s.mux, s.served = mux, servedList()
}

// localAPI is the embedder's local API handler, or unknown_route without one.
func (s *Server) localAPI() http.Handler {
	if s.opt.LocalAPI == nil {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			x := s.begin(w, r, s.rows["/"])
			defer x.end()
			x.serveUnknown("")
		})
	}
	return s.opt.LocalAPI(s)
}

// servedList is what the unknown_route answer says the relay serves: the routes that go to the
// pool and the catalog, under /v1.
func servedList() string {
	var out []string
	for _, row := range routeTable {
		if !row.v1 {
			continue
		}
		for _, m := range row.methods {
			if m == http.MethodGet && (row.path == "/responses" || strings.Contains(row.path, "{")) {
				continue // the socket and one model: named by their siblings
			}
			out = append(out, m+" /v1"+row.path)
		}
	}
	return strings.Join(out, ", ")
}

// RouteInfo is one route of the proxy, as the docs list it.
type RouteInfo struct {
	Methods []string // nil: any
	Paths   []string // the path, and its /v1 twin
	Access  string
	Spends  bool
	Doc     string
}

// Routes lists the proxy's routes, as routeTable has them.
func Routes() []RouteInfo {
	var out []RouteInfo
	for _, row := range routeTable {
		ri := RouteInfo{Methods: row.methods, Paths: []string{row.path}, Access: row.access.String(), Spends: row.spends, Doc: row.doc}
		if row.v1 {
			ri.Paths = append([]string{"/v1" + row.path}, ri.Paths...)
		}
		out = append(out, ri)
	}
	return out
}
