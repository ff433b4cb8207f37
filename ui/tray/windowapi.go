package tray

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/codexrelay/codexrelay/app/ledger"
	"github.com/codexrelay/codexrelay/ui/source"
)

// The tray process's side of the window API: it serves the relay's live state to the window
// processes it starts, and does what they ask of the listener (package source has the routes
// and the wire format both ends agree on).

// windowAPI serves the window API for one relay (A's side).
type windowAPI struct {
	src   source.Source
	ctl   source.RelayControl
	usage func() source.UsageSource
	token string
}

// newToken is a random bearer token for the window API.
func newToken() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// serveWindowAPI listens on a loopback port and serves api there until ctx ends. It returns
// the base URL.
func serveWindowAPI(ctx context.Context, api *windowAPI) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	srv := &http.Server{Handler: api, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: windowAPIIdle}
	go srv.Serve(capListener(ln, windowAPIMaxConns)) // windowlimits.go
	go func() { <-ctx.Done(); srv.Close() }()
	return "http://" + ln.Addr().String(), nil
}

func (api *windowAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	got, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if api.token == "" || subtle.ConstantTimeCompare([]byte(got), []byte(api.token)) != 1 {
		apiError(w, http.StatusUnauthorized, source.CodeUnauthorized, "the window API needs the token of the tray process")
		return
	}
	q := r.URL.Query()
	ctx, cancel := context.WithTimeout(r.Context(), source.UsageReadTimeout)
	defer cancel()
	switch r.Method + " " + r.URL.Path {
	case "GET /relay/stats":
		apiJSON(w, api.src.Stats())
	case "GET /relay/traces":
		limit, err := strconv.Atoi(q.Get("limit"))
		if err != nil {
			limit = source.RecentTraces
		}
		apiJSON(w, api.src.Traces(limit))
	case "GET /relay/status":
		apiJSON(w, source.StatusToJSON(api.ctl.Status()))
	case "POST /relay/pause":
		api.ctl.Pause()
		apiJSON(w, source.StatusToJSON(api.ctl.Status()))
	case "POST /relay/resume":
		if err := api.ctl.Resume(); err != nil {
			apiError(w, http.StatusConflict, source.CodeFailed, err.Error())
			return
		}
		apiJSON(w, source.StatusToJSON(api.ctl.Status()))
	case "POST /relay/listen":
		if err := api.ctl.SetListen(q.Get("addr")); err != nil {
			apiError(w, http.StatusConflict, source.CodeFailed, err.Error())
			return
		}
		apiJSON(w, source.StatusToJSON(api.ctl.Status()))
	case "GET /relay/usage/summary":
		since, err1 := parseAPITime(q.Get("since"))
		until, err2 := parseAPITime(q.Get("until"))
		if err := errors.Join(err1, err2); err != nil {
			apiError(w, http.StatusBadRequest, source.CodeBadRequest, err.Error())
			return
		}
		rep, err := api.usage().Summary(ctx, ledger.Query{Since: since, Until: until, By: q.Get("by")})
		usageAnswer(w, rep, err)
	case "GET /relay/usage/daily":
		since, err := parseAPITime(q.Get("since"))
		if err != nil {
			apiError(w, http.StatusBadRequest, source.CodeBadRequest, err.Error())
			return
		}
		days, err := api.usage().Daily(ctx, since)
		usageAnswer(w, days, err)
	case "GET /relay/usage/burn":
		b, err := api.usage().Burn(ctx, q.Get("account"))
		usageAnswer(w, b, err)
	case "GET /relay/usage/forecast":
		now, err := parseAPITime(q.Get("now"))
		if err != nil {
			apiError(w, http.StatusBadRequest, source.CodeBadRequest, err.Error())
			return
		}
		f, err := api.usage().Forecast(ctx, q["account"], now)
		usageAnswer(w, f, err)
	default:
		apiError(w, http.StatusNotFound, source.CodeBadRequest, "no such route: "+r.Method+" "+r.URL.Path)
	}
}

func parseAPITime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	return time.Parse(time.RFC3339Nano, s)
}

func usageAnswer(w http.ResponseWriter, v any, err error) {
	switch {
	case errors.Is(err, source.ErrUsageOff):
		apiError(w, http.StatusServiceUnavailable, source.CodeUsageOff, err.Error())
	case errors.Is(err, source.ErrUsageClosed):
		apiError(w, http.StatusServiceUnavailable, source.CodeUsageClosed, err.Error())
	case err != nil:
		apiError(w, http.StatusServiceUnavailable, source.CodeFailed, err.Error())
	default:
		apiJSON(w, v)
	}
}

func apiJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

func apiError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": code, "message": msg}})
}
