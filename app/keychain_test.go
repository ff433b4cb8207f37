package app

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/zalando/go-keyring"
)

// TestKeychainUnavailableSaysWhatToDo runs the keychain in a child process with no reachable
// D-Bus session: the error must name what to install or unlock, and nothing is written elsewhere.
func TestKeychainUnavailableSaysWhatToDo(t *testing.T) {
	if os.Getenv("CODEXRELAY_KEYCHAIN_CHILD") == "1" {
		err := Keychain{Service: "codexrelay-test-nobus"}.Set("x", "secret-value")
		var ke *KeychainError
		fmt.Printf("is-keychain-error=%v\n%v\n", errors.As(err, &ke), err)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestKeychainUnavailableSaysWhatToDo$")
	cmd.Env = append(os.Environ(), "CODEXRELAY_KEYCHAIN_CHILD=1", "DBUS_SESSION_BUS_ADDRESS=unix:path=/nonexistent/bus")
	out, _ := cmd.CombinedOutput()
	s := string(out)
	if !strings.Contains(s, "is-keychain-error=true") || !strings.Contains(s, "plaintext") ||
		!(strings.Contains(s, "D-Bus") || strings.Contains(s, "Secret Service")) {
		t.Fatalf("child said:\n%s", s)
	}
	if strings.Contains(s, "secret-value") {
		t.Fatal("the error shows the secret")
	}
}

// TestKeychainLostWhileRunning: accounts already loaded keep working when the keychain goes
// away; saving reports the error. (The keychain is made to fail in a child process, so that
// no other test sees it.)
func TestKeychainLostWhileRunning(t *testing.T) {
	if os.Getenv("CODEXRELAY_KEYCHAIN_LOST_CHILD") == "1" {
		keychainLostChild(t)
		return
	}
	testKeychain(t) // skips without a Secret Service
	cmd := exec.Command(os.Args[0], "-test.run", "^TestKeychainLostWhileRunning$", "-test.v")
	cmd.Env = append(os.Environ(), "CODEXRELAY_KEYCHAIN_LOST_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "served-after-loss=200") || !strings.Contains(string(out), "add-after-loss=keychain unavailable") {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

func keychainLostChild(t *testing.T) {
	k := testKeychain(t)
	up := newFakeUpstream(t)
	a, err := OpenRelay(Options{ConfigDir: keyOffFolder(t), Keychain: k, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	m, err := a.AddAccount(NewAccount{Name: "a", Kind: "openai", BaseURL: up.URL}, Secret{APIKey: "sk-a"})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Delete(accountUser(m.ID))
	srv := httptest.NewServer(a.Proxy)
	defer srv.Close()
	send := func() int {
		resp, err := http.Post(srv.URL+"/v1/responses", "application/json", strings.NewReader(`{"model":"m","input":"x","stream":true}`))
		if err != nil {
			return 0
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if c := send(); c != 200 {
		t.Fatalf("before: %d", c)
	}
	keyring.MockInitWithError(errors.New("org.freedesktop.secrets: the collection is locked"))
	fmt.Printf("served-after-loss=%d\n", send())
	_, err = a.AddAccount(NewAccount{Name: "b", Kind: "openai", BaseURL: up.URL}, Secret{APIKey: "sk-b"})
	fmt.Printf("add-after-loss=%v\n", err)
	if len(a.Accounts()) != 1 {
		t.Fatal("an account was saved without its secret")
	}
}

func TestSetKeyReplacesTheKeyInTheKeychain(t *testing.T) {
	k := testKeychain(t)
	cleanKeychain(t, k)
	opt := testOptions(t, k)
	up := newFakeUpstream(t)
	if code, _, errs := runCLI(t, opt, "sk-old\n", "accounts", "add", "--name", "work", "--kind", "openai", "--base-url", up.URL); code != 0 {
		t.Fatal(errs)
	}
	code, out, errs := runCLI(t, opt, "sk-new\n", "accounts", "set-key", "work")
	want := "Replaced the key of account \"work\"; it is in the system keychain.\nNo Codex Relay is running: it will use this when it starts.\n"
	if code != 0 || out != want || strings.Contains(out+errs, "sk-") {
		t.Fatalf("set-key: %d %q %q", code, out, errs)
	}
	a, err := OpenRelay(opt)
	if err != nil {
		t.Fatal(err)
	}
	m := a.Accounts()[0]
	v, err := k.Get(accountUser(m.ID))
	if err != nil {
		t.Fatal(err)
	}
	if sec, err := decodeSecret(v); err != nil || sec.APIKey != "sk-new" {
		t.Fatalf("the keychain holds %+v (%v)", sec, err)
	}
	if m.SecretRev != 1 {
		t.Fatalf("SecretRev %d: running relays would not read the new key", m.SecretRev)
	}
	for _, c := range []struct {
		stdin string
		args  []string
		code  int
		want  string
	}{
		{"sk-x\n", []string{"accounts", "set-key", "ghost"}, 1, "codexrelay: no account named \"ghost\" (see `codexrelay accounts list`)\n"},
		{"", []string{"accounts", "set-key", "work"}, 1, "codexrelay: no API key on stdin: pipe it in, e.g. `printenv OPENAI_API_KEY | codexrelay accounts set-key work`\n"},
		{"sk-a sk-b\n", []string{"accounts", "set-key", "work"}, 2, "codexrelay: the API key on stdin: API key contains whitespace: give the key alone; run 'codexrelay accounts set-key -h' for usage\n"},
	} {
		if code, _, errs := runCLI(t, opt, c.stdin, c.args...); code != c.code || errs != c.want {
			t.Errorf("%v: exit %d, stderr %q, want %q", c.args, code, errs, c.want)
		}
	}
}
