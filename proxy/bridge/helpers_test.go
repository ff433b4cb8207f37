package bridge

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// assertJSONEqual fails unless got and want are the same JSON value (member order and
// whitespace aside).
func assertJSONEqual(t *testing.T, what string, got, want []byte) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: produced invalid JSON %q: %v", what, got, err)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("%s: bad expectation %q: %v", what, want, err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("%s:\ngot:  %s\nwant: %s", what, compact(got), compact(want))
	}
}

func compact(b []byte) string {
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return string(b)
	}
	return buf.String()
}

// assertDropped fails unless dropped holds exactly want, in order.
func assertDropped(t *testing.T, dropped, want []string) {
	t.Helper()
	if len(dropped) == 0 && len(want) == 0 {
		return
	}
	if !reflect.DeepEqual(dropped, want) {
		t.Errorf("dropped = %q, want %q", dropped, want)
	}
}
