package proxy_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/codexrelay/codexrelay/proxy"
)

// changedBy reports whether f raised the relay's Changes: the generation moved and the channel
// read before f closed.
func changedBy(t *testing.T, r *relay, f func()) bool {
	t.Helper()
	g, ch := r.Changes()
	f()
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		return false
	}
	g2, _ := r.Changes()
	return g2 > g
}

// Every change a shower of the relay sees is raised: a request served, an account that
// reaches its limit, the settings applied, a pause; and a relay nobody uses raises nothing.
func TestChangesAreRaisedForWhatTheDashboardShows(t *testing.T) {
	a := newUpstream(t, status(429, `{"error":{"type":"usage_limit_reached","message":"limit","resets_in_seconds":600}}`))
	b := newUpstream(t, answerText("hi"))
	r := newRelay(t, proxy.Options{}, openaiAccount("a", a), openaiAccount("b", b))

	g, ch := r.Changes()
	time.Sleep(50 * time.Millisecond)
	select {
	case <-ch:
		t.Fatal("an idle relay raised a change")
	default:
	}
	if g2, _ := r.Changes(); g2 != g {
		t.Fatalf("generation moved from %d to %d with nothing happening", g, g2)
	}

	var resp *http.Response
	if !changedBy(t, r, func() {
		resp = r.post(t, "/v1/responses", `{"model":"gpt-5","input":"hi"}`)
		readAll(t, resp)
	}) {
		t.Fatal("a request served raised no change")
	}
	if resp.StatusCode != 200 || r.account(t, "a").State != proxy.StateCooldown {
		t.Fatalf("status %d, a is %s: the request should have rotated past a's limit", resp.StatusCode, r.account(t, "a").State)
	}
	if !changedBy(t, r, func() { r.SetSettingsGeneration(7) }) {
		t.Fatal("applied settings raised no change")
	}
	if !changedBy(t, r, func() { r.SetPaused(true) }) {
		t.Fatal("a pause raised no change")
	}
	if !changedBy(t, r, func() { r.SetAccounts([]proxy.Account{openaiAccount("b", b)}) }) {
		t.Fatal("a new account list raised no change")
	}
	if !changedBy(t, r, r.Touch) {
		t.Fatal("Touch raised no change")
	}
}
