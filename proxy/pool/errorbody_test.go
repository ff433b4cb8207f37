package pool

import "testing"

// An upstream's error object is read member by member: one member of an unexpected type hides
// nothing else, a numeric string is a number, and a resets_at in milliseconds is read as such.
func TestParseErrorBodyIsLenient(t *testing.T) {
	cases := []struct {
		name, body string
		want       ErrorBody
	}{
		{"retry_after as a string", `{"error":{"code":"rate_limit_exceeded","message":"slow down","retry_after":"30"}}`,
			ErrorBody{Code: "rate_limit_exceeded", Msg: "slow down", ResetIn: 30}},
		{"retry_after_seconds padded", `{"error":{"code":"rate_limit_exceeded","retry_after_seconds":" 12.5 "}}`,
			ErrorBody{Code: "rate_limit_exceeded", ResetIn: 12.5}},
		{"an odd member beside the code", `{"error":{"code":"usage_limit_reached","message":{"text":"x"},"resets_in_seconds":[1],"retry_after":true,"resets_at":"1700000600"}}`,
			ErrorBody{Code: "usage_limit_reached", ResetsAt: 1700000600}},
		{"resets_at in milliseconds", `{"error":{"code":"usage_limit_reached","resets_at":1700000600000}}`,
			ErrorBody{Code: "usage_limit_reached", ResetsAt: 1700000600}},
		{"resets_at in milliseconds, as a string", `{"error":{"type":"usage_limit_reached","resets_at":"1700000600123"}}`,
			ErrorBody{Code: "usage_limit_reached", ResetsAt: 1700000600}},
		{"a non-numeric string", `{"error":{"code":"rate_limit_exceeded","retry_after":"soon"}}`,
			ErrorBody{Code: "rate_limit_exceeded"}},
		{"a response that is not an object", `{"response":"gone","code":"server_error","message":"down"}`,
			ErrorBody{Code: "server_error", Msg: "down"}},
		{"an event's response error", `{"type":"response.failed","response":{"error":{"code":"insufficient_quota","message":"q","retry_after":"7"}}}`,
			ErrorBody{Code: "insufficient_quota", Msg: "q", ResetIn: 7}},
		{"a numeric message", `{"error":{"code":429,"message":42}}`, ErrorBody{Code: "429", Msg: "42"}},
	}
	for _, c := range cases {
		if got := ParseErrorBody([]byte(c.body)); got != c.want {
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
	}
}
