package localapi

import (
	"context"
	"crypto/subtle"
	"net/http"
	"strings"
)

// Handler serves the route table from b. A path of no route answers 404 unknown_route, a
// route's path with another method 405 method_not_allowed (with Allow).
func Handler(b Backend) http.Handler {
	mux := http.NewServeMux()
	for i := range routes {
		rt := &routes[i]
		mux.HandleFunc(rt.Method+" "+rt.Path, func(w http.ResponseWriter, r *http.Request) { b.serve(w, r, rt) })
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { unknown(w, r, mux) })
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		mux.ServeHTTP(w, r)
	})
}

// serve answers r with rt, if b has its part and the caller proved enough.
func (b *Backend) serve(w http.ResponseWriter, r *http.Request, rt *Route) {
	if !b.has(rt.part) {
		writeError(w, notServed(rt))
		return
	}
	if b.proof(r) < rt.Proof {
		writeError(w, denied(rt))
		return
	}
	v, e := rt.serve(b, r)
	if e != nil {
		writeError(w, e)
		return
	}
	writeJSON(w, v)
}

// unknown answers a request that matched no route.
func unknown(w http.ResponseWriter, r *http.Request, mux *http.ServeMux) {
	path := r.URL.Path
	if len(path) > 200 {
		path = path[:200] + "…"
	}
	for _, m := range []string{http.MethodGet, http.MethodPost} {
		r2 := *r
		r2.Method = m
		if _, p := mux.Handler(&r2); p != "/" {
			w.Header().Set("Allow", m)
			writeError(w, &Error{Status: http.StatusMethodNotAllowed, Type: typeInvalid, Code: "method_not_allowed",
				Message: "method " + r.Method + " is not allowed on " + path + "; use " + m})
			return
		}
	}
	served := make([]string, len(routes))
	for i, rt := range routes {
		served[i] = rt.Method + " " + rt.Path
	}
	writeError(w, &Error{Status: http.StatusNotFound, Type: typeInvalid, Code: "unknown_route",
		Message: "Codex Relay has no route " + r.Method + " " + path + "; its local API has " + strings.Join(served, ", ")})
}

// WithToken serves h to the requests that carry token as their bearer token, as the settings
// folder's own (ProofFolder: the tray hands the token only to the window processes it
// starts), and answers every other 401 unauthorized.
func WithToken(token string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if token == "" || subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
			writeError(w, &Error{Status: http.StatusUnauthorized, Type: typeInvalid, Code: "unauthorized",
				Message: "the window API needs the token of the tray process"})
			return
		}
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), proofKey{}, ProofFolder)))
	})
}
