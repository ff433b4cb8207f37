package proxy_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/codexrelay/codexrelay/proxy"
)

// The tokens an answer reports reach the trace, whatever the wires: Responses SSE and JSON,
// Chat streams with include_usage and Chat JSON, translated or not; and the trace hook sees
// each finished request.
func TestUsageReachesTheTrace(t *testing.T) {
	codex := newUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
		evs := textEvents("resp_codex", "gpt-5-codex", "done")
		evs[len(evs)-1] = strings.Replace(evs[len(evs)-1],
			`"usage":{"input_tokens":12,"output_tokens":3,"total_tokens":15,"input_tokens_details":{"cached_tokens":0},"output_tokens_details":{"reasoning_tokens":0}}`,
			`"usage":{"input_tokens":5000,"output_tokens":900,"total_tokens":5900,"input_tokens_details":{"cached_tokens":4096},"output_tokens_details":{"reasoning_tokens":640}}`, 1)
		writeEvents(w, evs)
	})
	api := newUpstream(t, answerText("hi"))
	chat := newUpstream(t, chatUpstream)
	chatAcct := openaiAccount("chat", chat)
	chatAcct.API = proxy.APIChat

	for _, tc := range []struct {
		name    string
		account proxy.Account
		path    string
		body    string
		want    proxy.Usage
	}{
		{"codex stream with reasoning", chatgptAccount("codex", codex), "/v1/responses", `{"model":"gpt-5-codex","input":"x","stream":true}`, proxy.Usage{InputTokens: 5000, CachedTokens: 4096, OutputTokens: 900, ReasoningTokens: 640}},
		{"responses stream", openaiAccount("api", api), "/v1/responses", `{"model":"m","input":"x","stream":true}`, proxy.Usage{InputTokens: 12, OutputTokens: 3}},
		{"responses json", openaiAccount("api", api), "/v1/responses", `{"model":"m","input":"x"}`, proxy.Usage{InputTokens: 12, OutputTokens: 3}},
		{"chat client over responses", openaiAccount("api", api), "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"x"}],"stream":true}`, proxy.Usage{InputTokens: 12, OutputTokens: 3}},
		{"chat stream", chatAcct, "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"x"}],"stream":true,"stream_options":{"include_usage":true}}`, proxy.Usage{InputTokens: 11, OutputTokens: 7}},
		{"chat json", chatAcct, "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"x"}]}`, proxy.Usage{InputTokens: 11, OutputTokens: 7}},
		{"responses client over chat", chatAcct, "/v1/responses", `{"model":"m","input":"x","stream":true}`, proxy.Usage{InputTokens: 11, OutputTokens: 7}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRelay(t, proxy.Options{}, tc.account)
			var mu sync.Mutex
			var hooked []proxy.Trace
			r.SetTraceHook(func(tr proxy.Trace) { mu.Lock(); hooked = append(hooked, tr); mu.Unlock() })
			resp := r.post(t, tc.path, tc.body, "X-Codex-Turn-Metadata", `{"cwd":"/home/dev/src/codexrelay","turn_id":"t1"}`)
			readAll(t, resp)
			tr := r.lastTrace(t, 1)
			if tr.Usage == nil || *tr.Usage != tc.want {
				t.Fatalf("usage %+v, want %+v", tr.Usage, tc.want)
			}
			if tr.Account != tc.account.Name || tr.Project != "codexrelay" {
				t.Errorf("account %q project %q", tr.Account, tr.Project)
			}
			m, err := http.Get(r.URL + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			want := fmt.Sprintf("codexrelay_tokens_total{account=%q,model=%q,kind=\"output\"} %d\n", tc.account.Name, tr.ResolvedModel, tc.want.OutputTokens)
			if body := string(readAll(t, m)); !strings.Contains(body, want) {
				t.Errorf("/metrics lacks %q", want)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(hooked) != 1 || hooked[0].ID != tr.ID {
				t.Errorf("the hook saw %d traces", len(hooked))
			}
		})
	}
}

func TestUsageRouteWithoutALedger(t *testing.T) {
	r := newRelay(t, proxy.Options{})
	resp, err := http.Get(r.URL + "/relay/usage")
	if err != nil {
		t.Fatal(err)
	}
	if e := decodeErr(t, resp); resp.StatusCode != 404 || e.Error.Code != "usage_unavailable" {
		t.Fatalf("%d %+v", resp.StatusCode, e)
	}
}
