package app

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestEchoedKeysStayOutOfAccountsList: an upstream that echoes the key it was sent in its 401
// body. `accounts list --json` (which reads the running relay's stats) and the serve log show
// the error redacted.
func TestEchoedKeysStayOutOfAccountsList(t *testing.T) {
	k := testKeychain(t)
	cleanKeychain(t, k)
	opt := testOptions(t, k)
	logs := &lockedBuffer{}
	opt.Logger = Logger(logs, func(string) string { return "debug" })
	echo := httptestServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(401)
		io.WriteString(w, `{"error":{"message":"Incorrect API key provided: `+strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")+`","code":"invalid_api_key"}}`)
	})
	const key = "sk-proj-VERYSECRETVERYSECRET9876"
	if code, out, errs := runCLI(t, opt, key+"\n", "accounts", "add", "--name", "echo", "--kind", "openai", "--base-url", echo); code != 0 {
		t.Fatal(out, errs)
	}
	_, svc := runningRelay(t, opt)
	code, body := send(t, svc.Status().Addr, "")
	code2, listed, _ := runCLI(t, opt, "", "accounts", "list", "--json")
	for where, text := range map[string]string{"client": body, "accounts list": listed, "log": logs.String()} {
		if strings.Contains(text, "VERYSECRET") {
			t.Errorf("the key reached the %s:\n%s", where, text)
		}
	}
	if code == 200 || code2 != 0 || !strings.Contains(listed, "****9876") || !strings.Contains(listed, `"state": "key_rejected"`) {
		t.Fatalf("client %d; list %d:\n%s", code, code2, listed)
	}
}

func httptestServer(t *testing.T, h http.HandlerFunc) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String() + "/v1"
}

func TestTheCallbackPortGuardComparesNumbers(t *testing.T) {
	a, _ := OpenRelay(testOptions(t, Keychain{}))
	for _, addr := range []string{"localhost:1455", "localhost:01455", "127.0.0.1:0001455"} {
		if err := a.CheckListen(addr, false); err == nil || !strings.Contains(err.Error(), "sign-in callback") {
			t.Errorf("%s: %v", addr, err)
		}
	}
	if err := a.CheckListen("127.0.0.1:14550", false); err != nil {
		t.Error(err)
	}
	if err := a.CheckListen("127.0.0.1:99999", false); err == nil {
		t.Error("port 99999 accepted")
	}
}

// TestAStrayCallbackDoesNotAbortASignIn: a request to the callback with a wrong state (a web
// page, an old tab) is ignored, and the real answer still completes the sign-in.
func TestAStrayCallbackDoesNotAbortASignIn(t *testing.T) {
	iss := newFakeIssuer(t)
	backend := newCodexBackend(t, func(string) bool { return true })
	a, _ := oauthApp(t, iss, backend.URL)
	real := iss.browser(t)
	m, err := a.SignInChatGPT(context.Background(), "", func(authURL string) error {
		u, _ := url.Parse(authURL)
		redirect := u.Query().Get("redirect_uri")
		for _, q := range []string{"?code=evil&state=guess", "?error=access_denied&state=", "?state=x"} {
			resp, err := http.Get(redirect + q)
			if err != nil {
				return err
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 400 || !strings.Contains(string(b), "ignored") {
				t.Errorf("stray %s: %d %s", q, resp.StatusCode, b)
			}
		}
		return real(authURL)
	})
	if err != nil || m.Kind != "chatgpt" {
		t.Fatalf("the sign-in did not survive the stray callbacks: %v", err)
	}
}

// TestServeAllowRemote: `serve --allow-remote` with the local key serves requests addressed to
// a non-loopback host when they carry the key, and refuses them without it.
func TestServeAllowRemote(t *testing.T) {
	k := testKeychain(t)
	cleanKeychain(t, k)
	opt := testOptions(t, k)
	_, out, _ := runCLI(t, opt, "", "local-key", "on")
	key := strings.Fields(strings.SplitN(out, "\n", 3)[1])[0]
	ln, _ := net.Listen("tcp", "0.0.0.0:0")
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	sig := make(chan os.Signal, 1)
	done := make(chan int)
	go func() {
		var o, e strings.Builder
		c := &testCLI{Stdin: strings.NewReader(""), Stdout: &o, Stderr: &e, Options: opt, Signals: sig}
		done <- c.Run([]string{"serve", "--listen", net.JoinHostPort("0.0.0.0", itoa(port)), "--allow-remote"})
	}()
	get := func(withKey bool) int {
		req, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1:"+itoa(port)+"/v1/models", nil)
		req.Host = "192.0.2.7:" + itoa(port)
		if withKey {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return -1
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	deadline := time.Now().Add(10 * time.Second)
	for get(true) == -1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if c := get(true); c != 503 { // past the guard: the relay's own answer, no account yet (no_accounts)
		t.Errorf("with the key: %d", c)
	}
	if c := get(false); c != 401 {
		t.Errorf("without the key: %d", c)
	}
	sig <- os.Interrupt
	if code := <-done; code != 0 {
		t.Fatalf("serve exited %d", code)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
