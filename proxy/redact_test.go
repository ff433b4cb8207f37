package proxy

import (
	"testing"
)

func TestRedactMasksSecretsAndKeepsTheRest(t *testing.T) {
	own := "sk-live-0123456789abcdefWXYZ"
	jwt := "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ1c2VyIn0.c2lnbmF0dXJlLXBhcnQ"
	for _, c := range []struct{ in, want string }{
		{"Incorrect API key provided: " + own + ". You can find your API key at https://platform.openai.com/account/api-keys.",
			"Incorrect API key provided: ****WXYZ. You can find your API key at https://platform.openai.com/account/api-keys."},
		{"Incorrect API key provided: sk-proj-AbCdEfGhIjKlMnOpQrStUv1234", "Incorrect API key provided: ****1234"},
		{"request headers: Authorization: Bearer " + jwt + "\nHost: x", "request headers: Authorization: Bearer ****hcnQ\nHost: x"},
		{"authorization=Basic dXNlcjpwYXNzd29yZA==", "authorization=Basic ****ZA=="},
		{`{"api_key": "abcdef123456789", "x-api-key":"` + own + `"}`, `{"api_key": "****6789", "x-api-key":"****WXYZ"}`},
		{"token " + jwt + " expired", "token ****hcnQ expired"},
		{"your local key crk-AAAABBBBCCCCDDDDEEEE is wrong", "your local key ****EEEE is wrong"},
		{"model gpt-5 does not exist", "model gpt-5 does not exist"},
		{"rate limit reached for requests per min: 500, used 501; see https://platform.openai.com/docs/guides/rate-limits",
			"rate limit reached for requests per min: 500, used 501; see https://platform.openai.com/docs/guides/rate-limits"},
		{"The model `gpt-5-codex` does not support tool_search; session_id=abc-123", "The model `gpt-5-codex` does not support tool_search; session_id=abc-123"},
	} {
		if got := redactString(c.in, own); got != c.want {
			t.Errorf("redact(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
	}
	// Nothing to redact: the same bytes, not a copy.
	b := []byte("upstream overloaded, try again")
	if out := redact(b, own); &out[0] != &b[0] {
		t.Error("clean text was copied")
	}
}
