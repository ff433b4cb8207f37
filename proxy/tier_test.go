package proxy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/coder/websocket"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/codexrelay/codexrelay/proxy"
)

// tierBackend is a ChatGPT backend's answer to service_tier: 400 for the tiers it does not
// serve (flex, auto, scale), else the stream of text.
func tierBackend(text string) func(w http.ResponseWriter, r *http.Request, n int) {
	return func(w http.ResponseWriter, r *http.Request, n int) {
		var b struct {
			Tier string `json:"service_tier"`
		}
		json.Unmarshal(readRecorded(r), &b)
		switch b.Tier {
		case "flex", "auto", "scale":
			status(400, `{"error":{"type":"invalid_request_error","code":"unsupported_value","param":"service_tier","message":"Unsupported service_tier: `+b.Tier+`"}}`)(w, r, n)
			return
		}
		writeEvents(w, textEvents(fmt.Sprintf("resp_%d", n), "gpt-5-codex", text))
	}
}

// withoutMember is body (a JSON object) without key, for comparing an upstream body with the
// client's member by member.
func withoutMember(t *testing.T, body []byte, key string) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("not a JSON object: %s", body)
	}
	delete(m, key)
	return m
}

// A tier the ChatGPT backend refuses is left out of what a ChatGPT account receives: the
// official SDK's request is served at the default tier instead of failing with 400, every
// other member goes as the client sent it, and the trace names the tier and says it was left
// out.
func TestServiceTierLeftOutForChatGPT(t *testing.T) {
	for _, tier := range []responses.ResponseNewParamsServiceTier{
		responses.ResponseNewParamsServiceTierFlex, responses.ResponseNewParamsServiceTierAuto, responses.ResponseNewParamsServiceTierScale,
	} {
		t.Run(string(tier), func(t *testing.T) {
			up := newUpstream(t, tierBackend("served"))
			r := newRelay(t, proxy.Options{}, chatgptAccount("seat", up))
			client := r.sdk()
			resp, err := client.Responses.New(context.Background(), responses.ResponseNewParams{
				Model:       "gpt-5-codex",
				Input:       responses.ResponseNewParamsInputUnion{OfString: openai.String("ping")},
				ServiceTier: tier,
			})
			if err != nil {
				t.Fatalf("the SDK's request failed: %v", err)
			}
			if resp.OutputText() != "served" {
				t.Fatalf("answer %q", resp.OutputText())
			}
			got := up.requests()
			if len(got) != 1 {
				t.Fatalf("upstream got %d requests, want 1 (no refusal, no retry)", len(got))
			}
			if v := field(t, got[0].Body, "service_tier"); v != nil {
				t.Errorf("a ChatGPT account was sent service_tier %s", v)
			}
			tr := r.lastTrace(t, 1)
			if tr.ServiceTier != string(tier) || !tr.ServiceTierOmitted || tr.Status != 200 {
				t.Errorf("trace: serviceTier %q omitted %v status %d, want %q, true, 200", tr.ServiceTier, tr.ServiceTierOmitted, tr.Status, tier)
			}
			b, _ := json.Marshal(tr)
			if !strings.Contains(string(b), `"serviceTier":"`+string(tier)+`","serviceTierOmitted":true`) {
				t.Errorf("trace JSON lacks the tier fields: %s", b)
			}
			if n := r.Stats().Requests.TierOmitted; n != 1 {
				t.Errorf("requests.tier_omitted %d, want 1", n)
			}
		})
	}
}

// Priority (Codex's Fast mode) is served by ChatGPT accounts and goes to them as the client
// wrote it; "fast", its older name, goes as it came and is recorded as priority. An API
// account gets every tier, flex included.
func TestServiceTierSentWhenServed(t *testing.T) {
	for _, c := range []struct {
		name, raw, recorded string
		chatgpt             bool
	}{
		{"priority to chatgpt", `"priority"`, "priority", true},
		{"fast to chatgpt", `"fast"`, "priority", true},
		{"escaped fast to chatgpt", `"f\u0061st"`, "priority", true},
		{"default to chatgpt", `"default"`, "default", true},
		{"flex to api", `"flex"`, "flex", false},
		{"priority to api", `"priority"`, "priority", false},
		{"auto to api", `"auto"`, "auto", false},
		{"unknown to chatgpt", `"turbo"`, "turbo", true},
		{"null", `null`, "", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			up := newUpstream(t, answerText("ok"))
			acc := openaiAccount("api", up)
			if c.chatgpt {
				up.handle = tierBackend("ok")
				acc = chatgptAccount("seat", up)
			}
			r := newRelay(t, proxy.Options{}, acc)
			body := `{"model":"gpt-5-codex","stream":true,"store":false,"service_tier":` + c.raw + `,"input":"ping"}`
			resp := r.post(t, "/v1/responses", body)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, readAll(t, resp))
			}
			readAll(t, resp)
			got := up.requests()
			if len(got) != 1 {
				t.Fatalf("upstream got %d requests", len(got))
			}
			if v := string(field(t, got[0].Body, "service_tier")); v != c.raw {
				t.Errorf("upstream got service_tier %s, want %s as sent", v, c.raw)
			}
			if string(got[0].Body) != body {
				t.Errorf("the body changed on its way:\n got %s\nwant %s", got[0].Body, body)
			}
			tr := r.lastTrace(t, 1)
			if tr.ServiceTier != c.recorded || tr.ServiceTierOmitted {
				t.Errorf("trace: serviceTier %q omitted %v, want %q, false", tr.ServiceTier, tr.ServiceTierOmitted, c.recorded)
			}
		})
	}
}

// A large request (past the serialization cache's threshold) with a tier the ChatGPT
// backend refuses, rotated between accounts: two ChatGPT accounts share one built body (a hit,
// not a second serialization), an API account gets the tier, and the trace speaks of the
// account that served.
func TestServiceTierVariantsInTheSerializationCache(t *testing.T) {
	items := make([]string, 0, 1200)
	for i := range 1200 {
		items = append(items, userItem(fmt.Sprintf("message %d of a long conversation, with some words to weigh it", i)))
	}
	body := `{"model":"gpt-5-codex","stream":true,"store":false,"service_tier":"flex","prompt_cache_key":"conv-tier","input":[` + strings.Join(items, ",") + `]}`
	if len(body) < 64<<10 {
		t.Fatalf("body is %d bytes, below the cache's threshold", len(body))
	}
	limited := status(429, `{"error":{"type":"usage_limit_reached","code":"usage_limit_reached","message":"limit reached"}}`)

	t.Run("two chatgpt accounts", func(t *testing.T) {
		a, b := newUpstream(t, limited), newUpstream(t, tierBackend("from b"))
		r := newRelay(t, proxy.Options{}, chatgptAccount("a", a), chatgptAccount("b", b))
		resp := r.post(t, "/v1/responses", body)
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, readAll(t, resp))
		}
		readAll(t, resp)
		ga, gb := a.requests(), b.requests()
		if len(ga) != 1 || len(gb) != 1 {
			t.Fatalf("requests: a %d, b %d", len(ga), len(gb))
		}
		if string(ga[0].Body) != string(gb[0].Body) || field(t, gb[0].Body, "service_tier") != nil {
			t.Errorf("the two ChatGPT accounts got different bodies, or service_tier")
		}
		if fmt.Sprint(withoutMember(t, gb[0].Body, "")) != fmt.Sprint(withoutMember(t, []byte(body), "service_tier")) {
			t.Errorf("members other than service_tier changed")
		}
		tr := r.lastTrace(t, 1)
		if tr.Serialization.Hits != 1 || tr.Serialization.Misses != 1 {
			t.Errorf("serialization %+v, want one miss then one hit", tr.Serialization)
		}
		if tr.Account != "b" || tr.ServiceTier != "flex" || !tr.ServiceTierOmitted {
			t.Errorf("trace: account %q tier %q omitted %v", tr.Account, tr.ServiceTier, tr.ServiceTierOmitted)
		}
	})

	t.Run("chatgpt then api", func(t *testing.T) {
		seat, api := newUpstream(t, limited), newUpstream(t, answerText("from the key"))
		r := newRelay(t, proxy.Options{}, chatgptAccount("seat", seat), openaiAccount("key", api))
		resp := r.post(t, "/v1/responses", body)
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, readAll(t, resp))
		}
		readAll(t, resp)
		if field(t, seat.requests()[0].Body, "service_tier") != nil {
			t.Errorf("the ChatGPT account was sent service_tier")
		}
		if v := string(field(t, api.requests()[0].Body, "service_tier")); v != `"flex"` {
			t.Errorf("the API account got service_tier %s, want \"flex\"", v)
		}
		tr := r.lastTrace(t, 1)
		if tr.Account != "key" || tr.ServiceTier != "flex" || tr.ServiceTierOmitted {
			t.Errorf("trace: account %q tier %q omitted %v, want key, flex, false (the key served it)", tr.Account, tr.ServiceTier, tr.ServiceTierOmitted)
		}
	})
}

// A Chat Completions client (the official SDK) asking for flex, served by a ChatGPT account
// through the translation: the translated body goes without service_tier; to a Chat account
// the client's body goes as it is, tier included.
func TestServiceTierFromAChatClient(t *testing.T) {
	params := openai.ChatCompletionNewParams{
		Model:       "gpt-5-codex",
		Messages:    []openai.ChatCompletionMessageParamUnion{openai.UserMessage("ping")},
		ServiceTier: openai.ChatCompletionNewParamsServiceTierFlex,
	}
	t.Run("chatgpt account", func(t *testing.T) {
		up := newUpstream(t, tierBackend("pong"))
		r := newRelay(t, proxy.Options{}, chatgptAccount("seat", up))
		client := r.sdk()
		resp, err := client.Chat.Completions.New(context.Background(), params)
		if err != nil {
			t.Fatalf("the SDK's request failed: %v", err)
		}
		if len(resp.Choices) != 1 || resp.Choices[0].Message.Content != "pong" {
			t.Fatalf("answer %+v", resp.Choices)
		}
		if v := field(t, up.requests()[0].Body, "service_tier"); v != nil {
			t.Errorf("the ChatGPT account was sent service_tier %s", v)
		}
		if tr := r.lastTrace(t, 1); tr.ServiceTier != "flex" || !tr.ServiceTierOmitted {
			t.Errorf("trace: tier %q omitted %v", tr.ServiceTier, tr.ServiceTierOmitted)
		}
	})
	t.Run("chat account", func(t *testing.T) {
		up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, n int) {
			status(200, `{"id":"chatcmpl-1","object":"chat.completion","created":1764460800,"model":"gpt-5-codex","service_tier":"flex","choices":[{"index":0,"message":{"role":"assistant","content":"pong"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}`)(w, r, n)
		})
		acc := openaiAccount("chat", up)
		acc.API = proxy.APIChat
		r := newRelay(t, proxy.Options{}, acc)
		client := r.sdk()
		if _, err := client.Chat.Completions.New(context.Background(), params); err != nil {
			t.Fatalf("the SDK's request failed: %v", err)
		}
		if v := string(field(t, up.requests()[0].Body, "service_tier")); v != `"flex"` {
			t.Errorf("the Chat account got service_tier %s", v)
		}
		if tr := r.lastTrace(t, 1); tr.ServiceTier != "flex" || tr.ServiceTierOmitted {
			t.Errorf("trace: tier %q omitted %v", tr.ServiceTier, tr.ServiceTierOmitted)
		}
	})
}

// Over the WebSocket transport the tier is in the response.create frame: a ChatGPT account's
// upstream socket gets the frame without it when it is one the backend refuses, with it when
// it is priority, and each turn's trace says which.
func TestServiceTierOverWebSocket(t *testing.T) {
	up := newWSUpstream(t)
	r := newRelay(t, proxy.Options{}, up.account("seat"))
	c := r.dial(t)
	frame := func(prev, tier string, items ...string) string {
		f := createFrame(prev, items...)
		return strings.TrimSuffix(f, "}") + `,"service_tier":` + mustJSON(tier) + "}"
	}
	id := responseID(t, turn(t, c, frame("", "flex", userItem("one"))))
	tr := r.lastTrace(t, 1)
	if tr.Transport != proxy.TransportWebSocket || tr.ServiceTier != "flex" || !tr.ServiceTierOmitted {
		t.Errorf("first turn's trace: transport %q tier %q omitted %v", tr.Transport, tr.ServiceTier, tr.ServiceTierOmitted)
	}
	responseID(t, turn(t, c, frame(id, "priority", userItem("two"))))
	tr = r.lastTrace(t, 2)
	if tr.ServiceTier != "priority" || tr.ServiceTierOmitted || !tr.Incremental {
		t.Errorf("second turn's trace: tier %q omitted %v incremental %v", tr.ServiceTier, tr.ServiceTierOmitted, tr.Incremental)
	}
	frames := up.got()
	if len(frames) != 2 {
		t.Fatalf("upstream got %d frames", len(frames))
	}
	if v := field(t, frames[0], "service_tier"); v != nil {
		t.Errorf("the first frame carried service_tier %s", v)
	}
	if v := string(field(t, frames[1], "service_tier")); v != `"priority"` {
		t.Errorf("the second frame carried service_tier %s, want \"priority\"", v)
	}
	c.Close(websocket.StatusNormalClosure, "")
}
