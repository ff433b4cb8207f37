package proxy

import (
	"bytes"
	"net/http"
	"testing"

	"github.com/codexrelay/codexrelay/proxy/internal/testkit"
	"github.com/codexrelay/codexrelay/proxy/payload"
)

// BenchmarkClientRequest is what admitting a Codex request costs once its body has arrived:
// the parse that validates it and splits its members, then the fields the relay routes on
// (model, stream, input, the session and the service tier). A Fast-mode body carries
// service_tier where Codex puts it, after include.
func BenchmarkClientRequest(b *testing.B) {
	big := testkit.SyntheticResponsesBody(10000)
	fast := bytes.Replace(testkit.SyntheticResponsesBody(10000), []byte(`"include":`), []byte(`"service_tier":"priority","include":`), 1)
	small := []byte(`{"model":"gpt-5-codex","instructions":"Be brief.","input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"ping"}]}],"store":false,"stream":true,"service_tier":"priority","prompt_cache_key":"0f6e3c1a-5b2d-4e8f-9a7c-1d2e3f4a5b6c"}`)
	h := http.Header{}
	for _, c := range []struct {
		name string
		body []byte
	}{{"codex-1.16MB", big}, {"codex-1.16MB-fast", fast}, {"small", small}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.body)))
			b.ReportAllocs()
			for range b.N {
				if _, e := parseClientRequest(routeResponses, c.body, h, nil); e != nil {
					b.Fatal(e.Message)
				}
			}
		})
	}
}

// BenchmarkClientFields is the fields alone, on a body already parsed: what reading the tier
// adds to admitting a request, without the parse that dwarfs it.
func BenchmarkClientFields(b *testing.B) {
	small := []byte(`{"model":"gpt-5-codex","instructions":"Be brief.","input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"ping"}]}],"tools":[],"tool_choice":"auto","parallel_tool_calls":false,"reasoning":{"effort":"medium"},"store":false,"stream":true,"include":["reasoning.encrypted_content"],"service_tier":"priority","prompt_cache_key":"0f6e3c1a-5b2d-4e8f-9a7c-1d2e3f4a5b6c","text":{"verbosity":"low"}}`)
	obj, err := payload.Parse(small)
	if err != nil {
		b.Fatal(err)
	}
	h := http.Header{}
	b.ReportAllocs()
	for range b.N {
		if _, e := clientFields(routeResponses, obj, h); e != nil {
			b.Fatal(e.Message)
		}
	}
}
