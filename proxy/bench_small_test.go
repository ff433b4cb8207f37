package proxy_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/codexrelay/codexrelay/proxy"
)

// BenchmarkSmallRequest is one small non-streamed request through the relay on loopback.
func BenchmarkSmallRequest(b *testing.B) {
	up := newUpstream(b, answerText("ok"))
	r := newRelay(b, proxy.Options{}, openaiAccount("a", up))
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	body := `{"model":"gpt-5","input":"ping"}`
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		req, _ := http.NewRequest("POST", r.URL+"/v1/responses", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}
