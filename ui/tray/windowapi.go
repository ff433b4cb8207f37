package tray

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"net"
	"net/http"
	"strings"
	"sync"

	"github.com/codexrelay/codexrelay/app"
	"github.com/codexrelay/codexrelay/app/localapi"
	"github.com/codexrelay/codexrelay/ui/source"
)

// The tray process's side of the window API: the local API's route table (app/localapi),
// served on a loopback port of its own behind the token the tray hands to each window process
// it starts (localapi.WithToken), from its relay (stats, traces, reset credits), its listener
// (pause, resume, status, listen) and its usage ledger.

// windowAPI serves the window API for one relay (A's side).
type windowAPI struct {
	src   source.Source
	ctl   source.RelayControl
	usage func() source.UsageSource
	token string

	once sync.Once
	h    http.Handler
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
	// windowlimits.go: an unproven connection has windowAPIHeaderWait to send its request (the
	// window process sends it at once), and is closed when the request lacks the token.
	srv := &http.Server{Handler: api, ReadHeaderTimeout: windowAPIHeaderWait, IdleTimeout: windowAPIIdle, ConnContext: withConn}
	go srv.Serve(capListener(ln, windowAPIMaxConns))
	go func() { <-ctx.Done(); srv.Close() }()
	return "http://" + ln.Addr().String(), nil
}

// ServeHTTP serves the local API's table from A's parts, to the holders of the token.
func (api *windowAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	api.once.Do(func() {
		b := localapi.Backend{Relay: api.src}
		if c, ok := api.src.(localapi.Credits); ok {
			b.Credits = c
		}
		if api.ctl != nil {
			b.Pause, b.Listener = app.ControlAPI(api.ctl), app.ControlAPI(api.ctl)
		}
		if api.usage != nil {
			b.Usage = func() localapi.Usage { return api.usage() }
		}
		api.h = localapi.WithToken(api.token, localapi.Handler(b))
	})
	got, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if api.token == "" || subtle.ConstantTimeCompare([]byte(got), []byte(api.token)) != 1 || !proveConn(r.Context()) {
		// Refused (WithToken answers 401), or one connection too many: it is closed after the
		// answer, and holds no place (windowlimits.go).
		w.Header().Set("Connection", "close")
	}
	api.h.ServeHTTP(w, r)
}
