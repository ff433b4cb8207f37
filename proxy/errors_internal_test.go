package proxy

import "testing"

// An upstream's error object is read member by member: one member of an unexpected type hides
// nothing else, a numeric string is a number, and a resets_at in milliseconds is read as such.
func TestParseErrorBodyIsLenient(t *testing.T) {
	cases := []struct {
		name, body string
		want       errorBody
	}{
		{"retry_after as a string", `{"error":{"code":"rate_limit_exceeded","message":"slow down","retry_after":"30"}}`,
			errorBody{code: "rate_limit_exceeded", msg: "slow down", resetIn: 30}},
		{"retry_after_seconds padded", `{"error":{"code":"rate_limit_exceeded","retry_after_seconds":" 12.5 "}}`,
			errorBody{code: "rate_limit_exceeded", resetIn: 12.5}},
		{"an odd member beside the code", `{"error":{"code":"usage_limit_reached","message":{"text":"x"},"resets_in_seconds":[1],"retry_after":true,"resets_at":"1700000600"}}`,
			errorBody{code: "usage_limit_reached", resetsAt: 1700000600}},
		{"resets_at in milliseconds", `{"error":{"code":"usage_limit_reached","resets_at":1700000600000}}`,
			errorBody{code: "usage_limit_reached", resetsAt: 1700000600}},
		{"resets_at in milliseconds, as a string", `{"error":{"type":"usage_limit_reached","resets_at":"1700000600123"}}`,
			errorBody{code: "usage_limit_reached", resetsAt: 1700000600}},
		{"a non-numeric string", `{"error":{"code":"rate_limit_exceeded","retry_after":"soon"}}`,
			errorBody{code: "rate_limit_exceeded"}},
		{"a response that is not an object", `{"response":"gone","code":"server_error","message":"down"}`,
			errorBody{code: "server_error", msg: "down"}},
		{"an event's response error", `{"type":"response.failed","response":{"error":{"code":"insufficient_quota","message":"q","retry_after":"7"}}}`,
			errorBody{code: "insufficient_quota", msg: "q", resetIn: 7}},
		{"a numeric message", `{"error":{"code":429,"message":42}}`, errorBody{code: "429", msg: "42"}},
	}
	for _, c := range cases {
		if got := parseErrorBody([]byte(c.body)); got != c.want {
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
	}
}
