package bridge

import (
	"strings"
	"testing"
)

// BenchmarkEcho measures what whole Responses cost a bridged answer whose request carries
// Codex-sized tools (about 36 KB) and instructions (4.5 KB): reading the echo once, and writing
// one lifecycle event that repeats it (a stream writes three).
func BenchmarkEcho(b *testing.B) {
	tool := `{"type":"function","name":"shell","description":"` + strings.Repeat("Runs a command. ", 40) +
		`","strict":false,"parameters":{"type":"object","properties":{"cmd":{"type":"string"}}}}`
	tools := "[" + strings.Repeat(tool+",", 39) + tool + "]"
	req := []byte(`{"model":"m","input":"x","instructions":"` + strings.Repeat("be brief ", 500) + `","tools":` + tools + `}`)
	obj, _ := decodeObject(req, "request")
	member := func(k string) ([]byte, bool) { v, ok := obj[k]; return v, ok }
	b.Run("NewEcho", func(b *testing.B) {
		for b.Loop() {
			NewEcho(member)
		}
	})
	b.Run("ResponseEvent", func(b *testing.B) {
		r := &Response{ID: "resp_1", Model: "m", CreatedAt: 1, Status: "in_progress", Echo: NewEcho(member)}
		n := 0
		for b.Loop() {
			n = len(ResponseEvent("response.created", 0, r))
		}
		b.SetBytes(int64(n))
	})
}
