package proxy_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/codexrelay/codexrelay/proxy"
)

// A request signed with the instance secret needs no local key and its answer carries the
// relay's proof; a signature made with another secret, one replayed, or one too old is
// refused; an answer is proved only to the nonce it was signed for.
func TestInstanceSignedRequests(t *testing.T) {
	r := newRelay(t, proxy.Options{LocalAPIKey: "crk-local"})
	r.SetInstanceSecret("the-instance-secret")
	get := func(secret string, at time.Time, replay *http.Request) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, r.URL+"/relay/stats", nil)
		nonce := ""
		if replay != nil {
			req.Header = replay.Header.Clone()
		} else if secret != "" {
			nonce = proxy.SignInstanceRequest(req, secret, at)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp, nonce
	}
	now := time.Now()
	if resp, _ := get("", now, nil); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("neither key nor signature: %d", resp.StatusCode)
	}
	resp, nonce := get("the-instance-secret", now, nil)
	if resp.StatusCode != 200 || !proxy.CheckInstanceProof(resp, "the-instance-secret", nonce) {
		t.Fatalf("signed: %d, proof %q", resp.StatusCode, resp.Header.Get(proxy.InstanceProofHeader))
	}
	if proxy.CheckInstanceProof(resp, "the-instance-secret", "another-nonce") || proxy.CheckInstanceProof(resp, "another-secret", nonce) {
		t.Fatal("a proof holds for another nonce or secret")
	}
	if resp, _ := get("another-secret", now, nil); resp.StatusCode != http.StatusUnauthorized || resp.Header.Get(proxy.InstanceProofHeader) != "" {
		t.Fatalf("signed with another secret: %d", resp.StatusCode)
	}
	if resp, _ := get("the-instance-secret", now.Add(-10*time.Minute), nil); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("an old signature: %d", resp.StatusCode)
	}
	once, _ := http.NewRequest(http.MethodGet, r.URL+"/relay/stats", nil)
	proxy.SignInstanceRequest(once, "the-instance-secret", now)
	if resp, _ := get("", now, once); resp.StatusCode != 200 {
		t.Fatalf("first use: %d", resp.StatusCode)
	}
	if resp, _ := get("", now, once); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a replayed signature: %d", resp.StatusCode)
	}
	// A signature covers its path: moved to another route it is refused.
	moved, _ := http.NewRequest(http.MethodGet, r.URL+"/relay/traces", nil)
	proxy.SignInstanceRequest(moved, "the-instance-secret", now)
	moved.URL.Path = "/relay/stats"
	if resp, err := http.DefaultClient.Do(moved); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a signature moved to another path: %v %v", resp.StatusCode, err)
	}
}

// The route that spends a banked reset needs the local key or a signature even while the key
// is off: no other local user spends one.
func TestTheRedeemRouteNeedsAKeyOrASignatureEvenWithTheKeyOff(t *testing.T) {
	r := newRelay(t, proxy.Options{})
	r.SetInstanceSecret("s3cret")
	if resp := r.post(t, "/relay/accounts/nobody/redeem-credit", ""); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("unsigned, key off: %d", resp.StatusCode)
	}
	req, _ := http.NewRequest(http.MethodPost, r.URL+"/relay/accounts/nobody/redeem-credit", nil)
	proxy.SignInstanceRequest(req, "s3cret", time.Now())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound { // through to the route: no such account
		t.Fatalf("signed: %d", resp.StatusCode)
	}
	// Everything else still answers without a key while it is off.
	if resp := r.post(t, "/v1/responses", "{}"); resp.StatusCode == http.StatusUnauthorized {
		t.Fatal("a request to an account needs a key while the key is off")
	}
}
