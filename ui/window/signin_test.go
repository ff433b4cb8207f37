package window

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The sign-in dialog switches to a device code on request, and shows where to enter it and
// the code, each with a Copy button. The issuer here is a fake that hands out a code and then
// refuses the sign-in.
func TestSignInWithACodeInstead(t *testing.T) {
	issuer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/accounts/deviceauth/usercode":
			w.Write([]byte(`{"device_auth_id":"d1","user_code":"ABCD-1234","interval":0}`))
		default:
			http.Error(w, `{"error":"expired_token"}`, http.StatusBadRequest)
		}
	}))
	defer issuer.Close()
	u, _ := newTestUI(t, map[string]string{"CODEXRELAY_AUTH_ISSUER": issuer.URL})
	// Run each flow only when the test says so: the browser one would wait for a browser.
	var flows []func()
	u.async = func(f func()) { flows = append(flows, f) }
	u.showAccounts()
	a := u.accounts
	a.signIn("")
	s := a.signin
	got := overlayTexts(t, a.win)
	for _, want := range []string{"Opening the ChatGPT sign-in page", "Use a code instead", "Cancel"} {
		if !strings.Contains(got, want) {
			t.Errorf("the dialog does not say %q:\n%s", want, got)
		}
	}
	tapButton(t, a.win.Canvas().Overlays().Top(), "Use a code instead")
	if len(flows) != 2 {
		t.Fatalf("%d flows started", len(flows))
	}
	flows[1]() // the device flow: shows the code, then fails
	if s.codeURL.Text != issuer.URL+"/codex/device" || s.code.Text != "ABCD-1234" {
		t.Errorf("code box: %q %q", s.codeURL.Text, s.code.Text)
	}
	if got := overlayTexts(t, a.win); !strings.Contains(got, "The ChatGPT sign-in failed: the device sign-in failed: HTTP 400") {
		t.Errorf("after the refusal: %q", got)
	}
	tapButton(t, s.codeBox, "Copy") // the first: the page to open
	if u.fa.Clipboard().Content() != issuer.URL+"/codex/device" {
		t.Errorf("clipboard %q", u.fa.Clipboard().Content())
	}
}
