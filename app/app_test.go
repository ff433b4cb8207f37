package app

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// testKeychain is the real system keychain under a service name of the test's own, emptied
// after the test. Keychain tests need a Secret Service: `make test` starts gnome-keyring in a
// private D-Bus session (CODEXRELAY_TEST_KEYRING=1) and there a missing one is a failure.
func testKeychain(t *testing.T) Keychain {
	t.Helper()
	if os.Getenv("CODEXRELAY_TEST_KEYRING") == "" && os.Getenv("DBUS_SESSION_BUS_ADDRESS") == "" {
		t.Skip("no Secret Service: run `make test`, which starts gnome-keyring in a private D-Bus session")
	}
	var b [6]byte
	rand.Read(b[:])
	k := Keychain{Service: "codexrelay-test-" + hex.EncodeToString(b[:])}
	if err := k.Set("probe", "x"); err != nil {
		t.Fatalf("the Secret Service does not work: %v", err)
	}
	k.Delete("probe")
	return k
}

// fakeUpstream records requests and answers a small Responses stream or JSON.
type fakeUpstream struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []*http.Request
}

func newFakeUpstream(t *testing.T) *fakeUpstream {
	f := &fakeUpstream{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		f.mu.Lock()
		f.reqs = append(f.reqs, r)
		f.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"resp_1\"}}\n\n")
		io.WriteString(w, "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"completed\",\"output\":[]}}\n\n")
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeUpstream) last() *http.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.reqs) == 0 {
		return nil
	}
	return f.reqs[len(f.reqs)-1]
}

// testOptions opens a settings folder of an existing install with the local key off, as most
// tests want (a new install, a folder with no settings file, turns the key on at its first
// write: see newInstallOptions).
func testOptions(t *testing.T, k Keychain) Options {
	return Options{ConfigDir: keyOffFolder(t), Keychain: k, Getenv: func(string) string { return "" }}
}

// keyOffFolder is a fresh settings folder whose settings file says nothing yet: an install
// whose local key was turned off.
func keyOffFolder(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, settingsName), []byte(`{"generation": 0, "accounts": []}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// newInstallOptions opens an empty settings folder: a new install.
func newInstallOptions(t *testing.T, k Keychain) Options {
	return Options{ConfigDir: t.TempDir(), Keychain: k, Getenv: func(string) string { return "" }}
}

func runCLI(t *testing.T, opt Options, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	c := &testCLI{Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb, Options: opt}
	code = c.Run(args)
	return code, out.String(), errb.String()
}

func TestSettingsAreAtomicPrivateAndSecretFree(t *testing.T) {
	k := testKeychain(t)
	opt := testOptions(t, k)
	up := newFakeUpstream(t)
	code, out, errs := runCLI(t, opt, "sk-live-very-secret\n", "accounts", "add", "--name", "work", "--kind", "openai", "--base-url", up.URL+"/v1/")
	if code != 0 {
		t.Fatalf("add: %d %s %s", code, out, errs)
	}
	path := filepath.Join(opt.ConfigDir, "settings.json")
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("settings file: %v mode %v", err, st.Mode())
	}
	b, _ := os.ReadFile(path)
	if bytes.Contains(b, []byte("very-secret")) || strings.Contains(out+errs, "very-secret") {
		t.Fatal("the API key leaked into the settings file or the output")
	}
	var s Settings
	if err := json.Unmarshal(b, &s); err != nil || len(s.Accounts) != 1 || s.Accounts[0].BaseURL != up.URL+"/v1" {
		t.Fatalf("settings: %s", b)
	}
	// No temporary file is left behind.
	if m, _ := filepath.Glob(filepath.Join(opt.ConfigDir, ".settings-*")); len(m) != 0 {
		t.Fatalf("temporary files left: %v", m)
	}
	// The secret is in the keychain, under the account's ID.
	v, err := k.Get(accountUser(s.Accounts[0].ID))
	if err != nil || !strings.Contains(v, "sk-live-very-secret") {
		t.Fatalf("keychain: %v", err)
	}
	t.Cleanup(func() { k.Delete(accountUser(s.Accounts[0].ID)) })
}

func TestAccountSurvivesRestartAndRelaysWithItsKey(t *testing.T) {
	k := testKeychain(t)
	opt := testOptions(t, k)
	up := newFakeUpstream(t)
	if code, _, errs := runCLI(t, opt, "sk-abc\n", "accounts", "add", "--name", "a", "--kind", "openai", "--base-url", up.URL); code != 0 {
		t.Fatal(errs)
	}
	// A new App is a restart: it must find the account and its key again.
	a, err := OpenRelay(opt)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(a.Proxy)
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/v1/responses", "application/json", strings.NewReader(`{"model":"m","input":"x","stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Contains(body, []byte("response.completed")) {
		t.Fatalf("relay: %d %s", resp.StatusCode, body)
	}
	if got := up.last().Header.Get("Authorization"); got != "Bearer sk-abc" {
		t.Fatalf("upstream authorization %q", got)
	}
	// Nothing the relay shows holds the key.
	for _, p := range []string{"/relay/stats", "/relay/traces", "/metrics"} {
		r, _ := http.Get(srv.URL + p)
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		if bytes.Contains(b, []byte("sk-abc")) {
			t.Fatalf("%s shows the key", p)
		}
	}
	// list shows the account, not the key; remove deletes the keychain entry.
	code, out, _ := runCLI(t, opt, "", "accounts", "list")
	if code != 0 || !strings.Contains(out, "a") || !strings.Contains(out, "ready") || strings.Contains(out, "sk-abc") {
		t.Fatalf("list: %s", out)
	}
	id := a.Accounts()[0].ID
	if code, _, errs := runCLI(t, opt, "", "accounts", "remove", "a"); code != 0 {
		t.Fatal(errs)
	}
	if _, err := k.Get(accountUser(id)); err != ErrNoSecret {
		t.Fatalf("keychain entry after remove: %v", err)
	}
	code, out, _ = runCLI(t, opt, "", "accounts", "list", "--json")
	if code != 0 || strings.TrimSpace(out) != "[]" {
		t.Fatalf("list after remove: %q", out)
	}
}

func TestChatGPTAccountRelaysWithKeychainToken(t *testing.T) {
	k := testKeychain(t)
	opt := testOptions(t, k)
	up := newFakeUpstream(t)
	a, err := OpenRelay(opt)
	if err != nil {
		t.Fatal(err)
	}
	m, err := a.AddAccount(NewAccount{Name: "me@example.com", Kind: "chatgpt", BaseURL: up.URL + "/backend-api/codex"},
		Secret{AccessToken: "eyJ-access", RefreshToken: "rt-1", AccountID: "acc-123"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Delete(accountUser(m.ID)) })
	srv := httptest.NewServer(a.Proxy)
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/v1/responses", "application/json", strings.NewReader(`{"model":"gpt-5","input":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Contains(body, []byte(`"status":"completed"`)) {
		t.Fatalf("relay: %d %s", resp.StatusCode, body)
	}
	h := up.last().Header
	if h.Get("Authorization") != "Bearer eyJ-access" || h.Get("chatgpt-account-id") != "acc-123" || h.Get("originator") != "codex_cli_rs" {
		t.Fatalf("upstream headers %v", h)
	}
	if up.last().URL.Path != "/backend-api/codex/responses" {
		t.Fatalf("path %s", up.last().URL.Path)
	}
}

func TestAccountCommandsValidate(t *testing.T) {
	k := testKeychain(t)
	opt := testOptions(t, k)
	for _, c := range []struct {
		stdin string
		args  []string
		code  int
		want  string
	}{
		{"", []string{"accounts", "add", "--name", "a", "--kind", "openai", "--base-url", "https://x.test/v1"}, 1, "no API key on stdin"},
		{"k\n", []string{"accounts", "add", "--name", "a", "--kind", "openai", "--base-url", "ftp://x"}, 2, "base URL"},
		{"k\n", []string{"accounts", "add", "--name", "a", "--kind", "openai"}, 2, "--base-url is required"},
		{"k\n", []string{"accounts", "add", "--name", "a", "--kind", "openai", "--base-url", "https://u:p@x.test"}, 2, "credentials"},
		{"k\n", []string{"accounts", "add", "--name", "../a", "--kind", "openai", "--base-url", "https://x.test"}, 2, "not valid"},
		{"k\n", []string{"accounts", "add", "--name", "a", "--kind", "openai", "--base-url", "https://x.test", "--api", "soap"}, 2, "--api"},
		{"k\n", []string{"accounts", "add", "--name", "a", "--kind", "openai", "--base-url", "https://x.test", "sk-on-argv"}, 2, "stdin"},
		{"", []string{"accounts", "remove", "ghost"}, 1, "no account named"},
		{"", []string{"accounts", "frobnicate"}, 2, "unknown"},
		{"", []string{"nonsense"}, 2, "unknown command"},
	} {
		code, out, errs := runCLI(t, opt, c.stdin, c.args...)
		if code != c.code || !strings.Contains(errs, c.want) {
			t.Errorf("%v: code %d (want %d), stderr %q (want %q), stdout %q", c.args, code, c.code, errs, c.want, out)
		}
		if strings.Contains(errs+out, "sk-on-argv") {
			t.Errorf("%v: echoed a key", c.args)
		}
	}
	// Duplicate names are refused and the order can be changed.
	for _, n := range []string{"one", "two", "three"} {
		if code, _, errs := runCLI(t, opt, "key-"+n+"\n", "accounts", "add", "--name", n, "--kind", "openai", "--base-url", "https://x.test/v1"); code != 0 {
			t.Fatal(errs)
		}
	}
	if code, _, errs := runCLI(t, opt, "k\n", "accounts", "add", "--name", "two", "--kind", "openai", "--base-url", "https://x.test/v1"); code != 1 || !strings.Contains(errs, "exists already") {
		t.Fatalf("duplicate: %d %s", code, errs)
	}
	if code, _, errs := runCLI(t, opt, "", "accounts", "move", "three", "--to", "1"); code != 0 {
		t.Fatal(errs)
	}
	if code, _, errs := runCLI(t, opt, "", "accounts", "disable", "one"); code != 0 {
		t.Fatal(errs)
	}
	a, _ := OpenRelay(opt)
	var names []string
	for _, m := range a.Accounts() {
		names = append(names, m.Name)
		k.Delete(accountUser(m.ID))
	}
	if strings.Join(names, ",") != "three,one,two" || !a.Accounts()[1].Disabled {
		t.Fatalf("order %v, disabled %v", names, a.Accounts()[1].Disabled)
	}
	if st := a.Proxy.Stats().Accounts; st[1].State != "disabled" {
		t.Fatalf("proxy state of a disabled account: %s", st[1].State)
	}
}

func TestCorruptSettingsAreKeptAside(t *testing.T) {
	dir := t.TempDir()
	garbage := []byte(`{"accounts": [ {"name": "half`)
	os.WriteFile(filepath.Join(dir, "settings.json"), garbage, 0o600)
	inst, _, err := ClaimInstance(dir, "tray") // only the relay's own start moves it aside
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Release()
	a, err := OpenRelay(Options{ConfigDir: dir, Getenv: func(string) string { return "" }, Now: func() time.Time { return time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC) }})
	if err != nil {
		t.Fatal(err)
	}
	if a.LoadWarning == nil || !strings.Contains(a.LoadWarning.Error(), "settings.json.corrupt-20261130T120000Z") {
		t.Fatalf("warning: %v", a.LoadWarning)
	}
	kept, err := os.ReadFile(filepath.Join(dir, "settings.json.corrupt-20261130T120000Z"))
	if err != nil || !bytes.Equal(kept, garbage) {
		t.Fatalf("the corrupt file was not kept as it was: %v %q", err, kept)
	}
	if _, err := os.Stat(filepath.Join(dir, "settings.json")); !os.IsNotExist(err) {
		t.Fatal("the corrupt file is still in place")
	}
}

func TestUnreadableSettingsStopTheApp(t *testing.T) {
	dir := t.TempDir()
	// A directory where the file should be cannot be read, even by root.
	os.Mkdir(filepath.Join(dir, "settings.json"), 0o700)
	_, err := OpenRelay(Options{ConfigDir: dir, Getenv: func(string) string { return "" }})
	if err == nil || !strings.Contains(err.Error(), "cannot read the settings file") {
		t.Fatalf("error %v", err)
	}
}

func TestEnvironmentOverrides(t *testing.T) {
	env := map[string]string{"MODELS_CACHE_MS": "5000", "MODELS_STALE_WHILE_REVALIDATE": "false", "MODELS_STALE_MAX_AGE_MS": "9000", "CODEXRELAY_LISTEN": "127.0.0.1:9999"}
	a, err := OpenRelay(Options{ConfigDir: t.TempDir(), Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatal(err)
	}
	c := a.Proxy.Stats().Catalog
	if c.TTLMs != 5000 || c.SWREnabled || c.StaleMaxAgeMs != 9000 || a.ListenAddr() != "127.0.0.1:9999" {
		t.Fatalf("catalog %+v listen %s", c, a.ListenAddr())
	}
	env["MODELS_CACHE_MS"] = "soon"
	if _, err := OpenRelay(Options{ConfigDir: t.TempDir(), Getenv: func(k string) string { return env[k] }}); err == nil || !strings.Contains(err.Error(), "MODELS_CACHE_MS") {
		t.Fatalf("bad env value: %v", err)
	}
}

func TestServeRefusesRemoteAndStopsOnSignal(t *testing.T) {
	opt := Options{ConfigDir: t.TempDir(), Getenv: func(string) string { return "" }}
	code, _, errs := runCLI(t, opt, "", "serve", "--listen", "0.0.0.0:7455")
	if code != 2 || !strings.Contains(errs, "must be a loopback address") {
		t.Fatalf("remote listen: %d %s", code, errs)
	}
	code, _, errs = runCLI(t, opt, "", "serve", "--listen", "0.0.0.0:7455", "--allow-remote")
	if code != 1 || !strings.Contains(errs, "local API key") {
		t.Fatalf("remote listen without key: %d %s", code, errs)
	}
	// A free port, then serve on it in the foreground until a signal.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	sig := make(chan os.Signal, 1)
	var out bytes.Buffer
	errb := &lockedBuffer{} // read while serve writes to it
	c := &testCLI{Stdin: strings.NewReader(""), Stdout: &out, Stderr: errb, Options: opt, Signals: sig}
	done := make(chan int, 1)
	go func() { done <- c.Run([]string{"serve", "--listen", addr}) }()
	var resp *http.Response
	deadline := time.Now().Add(10 * time.Second)
	for {
		var err error
		resp, err = http.Get("http://" + addr + "/health")
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not come up: %v (%s)", err, errb.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	resp.Body.Close()
	// A new install: the local key is on, and serve said so.
	r, _ := http.Post("http://"+addr+"/v1/responses", "application/json", strings.NewReader(`{"model":"m","input":"x"}`))
	r.Body.Close()
	if r.StatusCode != 401 || !strings.Contains(errb.String(), "new install") {
		t.Fatalf("a new install without the key: %d (%s)", r.StatusCode, errb.String())
	}
	_, key, _ := runCLI(t, opt, "", "local-key", "show")
	// With no account, a request gets 503 and advice.
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/responses", strings.NewReader(`{"model":"m","input":"x"}`))
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(key[strings.LastIndex(strings.TrimSpace(key), "\n")+1:]))
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if r.StatusCode != 503 || !bytes.Contains(b, []byte("accounts add")) {
		t.Fatalf("no account: %d %s", r.StatusCode, b)
	}
	sig <- syscall.SIGTERM
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("serve exit %d: %s", code, errb.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not stop on SIGTERM")
	}
	if !strings.Contains(errb.String(), "listening") {
		t.Fatalf("log: %s", errb.String())
	}
	_ = context.Background
}

func TestSettingsAndAliasesCommandsApplyLive(t *testing.T) {
	opt := Options{ConfigDir: t.TempDir(), Getenv: func(string) string { return "" }}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"settings", "set", "stale-while-revalidate", "false"}, 0, "Set stale-while-revalidate to false."},
		{[]string{"settings", "set", "ttl-ms", "60000"}, 0, ""},
		{[]string{"settings", "set", "stale-max-age-ms", "120000"}, 0, ""},
		{[]string{"settings", "set", "strategy", "round-robin"}, 0, ""},
		{[]string{"settings", "set", "strategy", "random"}, 2, "strategy must be priority, round-robin, most-quota-left or reset-first, not \"random\""},
		{[]string{"settings", "set", "ttl-ms", "-5"}, 2, "positive"},
		{[]string{"settings", "set", "listen", "0.0.0.0:80"}, 2, "loopback"},
		{[]string{"settings", "set", "listen", "127.0.0.1:7999"}, 0, ""},
		{[]string{"aliases", "set", "fast", "gpt-5-mini", "gpt-4.1-mini"}, 0, "Alias fast now names gpt-5-mini, gpt-4.1-mini."},
		{[]string{"aliases", "set", "gpt-5-mini", "fast"}, 1, "cycle"},
		{[]string{"aliases", "remove", "nothing"}, 1, "no alias named \"nothing\""},
	} {
		code, out, errs := runCLI(t, opt, "", c.args...)
		if code != c.code || !strings.Contains(out+errs, c.want) {
			t.Errorf("%v: %d %q %q", c.args, code, out, errs)
		}
	}
	a, err := OpenRelay(opt)
	if err != nil {
		t.Fatal(err)
	}
	cat := a.Proxy.Stats().Catalog
	if cat.SWREnabled || cat.StaleMaxAgeMs != 120000 || cat.TTLMs != 60000 || a.ListenAddr() != "127.0.0.1:7999" {
		t.Fatalf("after restart: %+v %s", cat, a.ListenAddr())
	}
	// The tray's toggle changes the running proxy at once and persists.
	if err := a.Set(SettingSWR, "true"); err != nil {
		t.Fatal(err)
	}
	if !a.Proxy.Stats().Catalog.SWREnabled || a.Proxy.Stats().Catalog.StaleMaxAgeMs != 120000 {
		t.Fatalf("live: %+v", a.Proxy.Stats().Catalog)
	}
	b, _ := OpenRelay(opt)
	if !b.Proxy.Stats().Catalog.SWREnabled || strings.Join(b.Settings().Aliases["fast"], ",") != "gpt-5-mini,gpt-4.1-mini" {
		t.Fatalf("persisted: %+v %v", b.Proxy.Stats().Catalog, b.Settings().Aliases)
	}
	code, out, _ := runCLI(t, opt, "", "settings")
	if code != 0 || !strings.Contains(out, "round-robin") || !strings.Contains(out, "stale-while-revalidate  true") {
		t.Fatalf("settings: %s", out)
	}
}

func TestServicePauseResumeAndRestartOnANewPort(t *testing.T) {
	free := func() string {
		ln, _ := net.Listen("tcp", "127.0.0.1:0")
		defer ln.Close()
		return ln.Addr().String()
	}
	first, second := free(), free()
	env := map[string]string{}
	a, err := OpenRelay(Options{ConfigDir: keyOffFolder(t), Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.update(func(s *Settings) error { s.Listen = first; return nil }); err != nil {
		t.Fatal(err)
	}
	svc := a.NewService()
	var changes int
	svc.OnChange = func(ServiceStatus) { changes++ }
	if err := svc.Start(); err != nil {
		t.Fatal(err)
	}
	up := func(addr string) bool {
		resp, err := http.Get("http://" + addr + "/health")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil
	}
	if !up(first) || !svc.Status().Running {
		t.Fatalf("not serving: %+v", svc.Status())
	}
	// Paused, the port stays the relay's and says how to resume.
	svc.Pause()
	if !up(first) || !svc.Status().Paused || svc.Status().Running {
		t.Fatalf("paused: %+v", svc.Status())
	}
	resp, err := http.Get("http://" + first + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || !strings.Contains(string(body), "relay_paused") || !strings.Contains(string(body), "Resume") {
		t.Fatalf("paused answer: %d %s", resp.StatusCode, body)
	}
	if err := svc.Resume(); err != nil || !up(first) || !svc.Status().Running {
		t.Fatalf("resume: %v %+v", err, svc.Status())
	}
	// Serving again: a request gets the relay's own answer (no account yet), not relay_paused.
	if resp, err := http.Get("http://" + first + "/v1/models"); err != nil {
		t.Fatal(err)
	} else if body, _ := io.ReadAll(resp.Body); resp.Body.Close() != nil || strings.Contains(string(body), "relay_paused") || !strings.Contains(string(body), "no_accounts") {
		t.Fatalf("after resume: %d %s", resp.StatusCode, body)
	}
	// A taken port is refused and the old address keeps serving.
	taken, _ := net.Listen("tcp", "127.0.0.1:0")
	defer taken.Close()
	if err := svc.SetListen(taken.Addr().String()); err == nil || !strings.Contains(err.Error(), "port is taken") {
		t.Fatalf("taken port: %v", err)
	}
	if !up(first) {
		t.Fatal("the old address stopped serving")
	}
	if err := svc.SetListen(second); err != nil {
		t.Fatal(err)
	}
	// The old listener closes in the background once the new one serves: give it a moment.
	for deadline := time.Now().Add(5 * time.Second); up(first) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if up(first) || !up(second) || a.Settings().Listen != second {
		t.Fatalf("after the move: %+v", svc.Status())
	}
	svc.Stop()
	if up(second) || changes < 5 {
		t.Fatalf("stop: %+v, %d changes", svc.Status(), changes)
	}
}

func TestBenchRelayProcessServesUntilStdinCloses(t *testing.T) {
	// `bench relay-process` is the relay `bench proxy` starts in a process of its own: it
	// prints its base URL, relays to --upstream, reports its memory when asked, and ends when
	// its stdin closes.
	up := newFakeUpstream(t)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &testCLI{Stdin: inR, Stdout: outW, Stderr: io.Discard, Options: Options{ConfigDir: t.TempDir(), Getenv: func(string) string { return "" }}}
	code := make(chan int, 1)
	go func() { code <- c.Run([]string{"bench", "relay-process", "--upstream", up.URL + "/v1"}) }()
	out := bufio.NewReader(outR)
	line, err := out.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "http://127.0.0.1:") {
		t.Fatalf("first line %q, %v", line, err)
	}
	resp, err := http.Post(strings.TrimSpace(line)+"/responses", "application/json", strings.NewReader(`{"model":"gpt-5","input":"hi"}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || up.last() == nil || up.last().URL.Path != "/v1/responses" {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	io.WriteString(inW, "settle\n")
	var rss int64
	var goroutines int
	if line, err := out.ReadString('\n'); err != nil {
		t.Fatal(err)
	} else if _, err := fmt.Sscan(line, &rss, &goroutines); err != nil || rss <= 0 || goroutines <= 0 {
		t.Fatalf("settle answered %q", line)
	}
	inW.Close()
	select {
	case c := <-code:
		if c != 0 {
			t.Fatalf("exit code %d", c)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the relay process did not end when its stdin closed")
	}
}

// hold-seconds: the CLI changes it, a running relay follows, `settings` shows it; out of range
// is a usage error that changes nothing.
func TestHoldSetting(t *testing.T) {
	opt := Options{ConfigDir: t.TempDir(), Getenv: func(string) string { return "" }}
	a, err := OpenRelay(opt)
	if err != nil {
		t.Fatal(err)
	}
	if got := a.Proxy.HoldBound(); got != 30*time.Second {
		t.Fatalf("default hold %v", got)
	}
	if code, _, errs := runCLI(t, opt, "", "settings", "set", "hold-seconds", "5"); code != 0 {
		t.Fatalf("set: %d %s", code, errs)
	}
	a.Reload()
	if got := a.Proxy.HoldBound(); got != 5*time.Second {
		t.Fatalf("live hold %v", got)
	}
	if code, _, errs := runCLI(t, opt, "", "settings", "set", "hold-seconds", "99999"); code != 2 || !strings.Contains(errs, "3600") {
		t.Fatalf("out of range: %d %s", code, errs)
	}
	runCLI(t, opt, "", "settings", "set", "hold-seconds", "-1")
	a.Reload()
	if code, out, _ := runCLI(t, opt, "", "settings"); code != 0 || !strings.Contains(out, "\nhold-seconds ") || !strings.Contains(out, " -1\n") || a.Proxy.HoldBound() >= 0 {
		t.Fatalf("settings: %s (bound %v)", out, a.Proxy.HoldBound())
	}
}
