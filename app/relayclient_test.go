package app

import (
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/codexrelay/codexrelay/proxy"
)

// impostor is a program of another user listening where the relay would: it records what it
// receives and forges the answers the command line would print.
type impostor struct {
	addr string
	mu   sync.Mutex
	reqs []*http.Request
}

func newImpostor(t *testing.T, ln net.Listener) *impostor {
	t.Helper()
	im := &impostor{addr: ln.Addr().String()}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		im.mu.Lock()
		im.reqs = append(im.reqs, r)
		im.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.HasSuffix(r.URL.Path, "/redeem-credit"):
			io.WriteString(w, `{"account":"plus","code":"reset","windows_reset":9}`)
		case r.URL.Path == "/health":
			io.WriteString(w, `{"settings_generation":999999}`)
		default:
			io.WriteString(w, `{"accounts":[{"name":"plus","state":"FORGED-by-nobody"}]}`)
		}
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return im
}

func (im *impostor) received() []*http.Request {
	im.mu.Lock()
	defer im.mu.Unlock()
	return append([]*http.Request(nil), im.reqs...)
}

// The command line talks only to the relay that holds this folder's instance lock, never sends
// it the local key, and refuses an answer the relay did not sign: a program listening on the
// relay's port in its place learns nothing and its forged answers are not printed.
func TestTheLocalKeyNeverGoesToWhoeverListensOnThePort(t *testing.T) {
	a, opt, _ := creditApp(t)
	key, err := a.SetLocalKey(true)
	if err != nil {
		t.Fatal(err)
	}
	// No relay runs; another program took the configured port.
	ln, err := net.Listen("tcp", a.ListenAddr())
	if err != nil {
		t.Fatal(err)
	}
	im := newImpostor(t, ln)
	code, out, errs := runCLI(t, opt, "", "accounts", "list")
	if code != 0 || strings.Contains(out, "FORGED") {
		t.Fatalf("accounts list with no relay running: %d %q %s", code, out, errs)
	}
	code, out, _ = runCLI(t, opt, "", "settings", "set", "strategy", "round-robin")
	if code != 0 || strings.Contains(out, "applied it") {
		t.Fatalf("a change with no relay running: %q", out)
	}
	if got := im.received(); len(got) != 0 {
		t.Fatalf("the program on the port got %d requests with no relay running", len(got))
	}

	// The folder's relay runs, but what answers at its address is the other program (it took
	// the port while the relay moved): it gets signed requests, no key, and is not believed.
	inst, other, err := ClaimInstance(opt.ConfigDir, "serve")
	if err != nil || other != nil {
		t.Fatalf("claim: %v %v", other, err)
	}
	defer inst.Release()
	inst.Serving(im.addr, false)
	code, out, _ = runCLI(t, opt, "", "accounts", "list")
	if code != 0 || strings.Contains(out, "FORGED") {
		t.Fatalf("accounts list: the forged answer was believed: %q", out)
	}
	if _, err := a.RedeemCredit("plus"); !errors.Is(err, ErrNotTheRelay) {
		t.Fatalf("redeem through an impostor: %v", err)
	}
	code, out, _ = runCLI(t, opt, "", "settings", "set", "strategy", "priority")
	if code != 0 || strings.Contains(out, "applied it") || !strings.Contains(out, "not this folder's Codex Relay") {
		t.Fatalf("a change, the impostor's /health: %q", out)
	}
	got := im.received()
	if len(got) == 0 {
		t.Fatal("the test's impostor was not asked: it tests nothing")
	}
	for _, r := range got {
		if r.Header.Get("Authorization") != "" || r.Header.Get("X-Api-Key") != "" || strings.Contains(strings.Join(flatHeaders(r.Header), " "), key) {
			t.Fatalf("%s %s carried a key: %v", r.Method, r.URL.Path, r.Header)
		}
		if r.Header.Get(proxy.InstanceAuthHeader) == "" {
			t.Fatalf("%s %s was not signed", r.Method, r.URL.Path)
		}
	}
}

func flatHeaders(h http.Header) []string {
	var out []string
	for k, vs := range h {
		out = append(out, k+": "+strings.Join(vs, ","))
	}
	return out
}
