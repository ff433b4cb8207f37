package proxy_test

import (
	"bytes"
	"io"
	"net/http"
	"testing"

	"github.com/codexrelay/codexrelay/proxy"
	"github.com/codexrelay/codexrelay/proxy/internal/testkit"
)

// BenchmarkLargeStreamedRequest sends the 1.16 MB Codex-shaped body through the relay.
func BenchmarkLargeStreamedRequest(b *testing.B) {
	up := newUpstream(b, func(w http.ResponseWriter, r *http.Request, n int) {
		writeEvents(w, textEvents("resp", "gpt-5-codex", "ok"))
	})
	s := proxy.New(proxy.Options{})
	s.SetAccounts([]proxy.Account{openaiAccount("a", up)})
	body := testkit.SyntheticResponsesBody(10000)
	b.SetBytes(int64(len(body)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		req, _ := http.NewRequest("POST", "http://127.0.0.1/v1/responses", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		w := &discardWriter{h: http.Header{}}
		s.ServeHTTP(w, req)
		if w.status != 200 {
			b.Fatalf("status %d", w.status)
		}
	}
}

type discardWriter struct {
	h      http.Header
	status int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(p []byte) (int, error) { return io.Discard.Write(p) }
func (w *discardWriter) WriteHeader(s int)           { w.status = s }
func (w *discardWriter) Flush()                      {}
