// Command upstream is the OpenAI-compatible upstream of `make deb-test`: on a loopback port it
// lists one model (GET /v1/models) and answers every POST /v1/responses with a short completed
// response ("OK") that reports its token usage, as a stream (with its message's item events, as
// the Codex CLI reads them) or as JSON (the body's "stream"), so that a request through the
// installed relay becomes a row of its usage ledger. It prints its base
// URL on its first line and serves until it is killed.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
)

const model = "deb-test-model"

func main() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("http://%s/v1\n", ln.Addr())
	os.Stdout.Sync()
	log.Fatal(http.Serve(ln, http.HandlerFunc(serve)))
}

func serve(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/v1/models":
		json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": []any{map[string]any{"id": model, "object": "model"}}})
	case r.Method == http.MethodPost && r.URL.Path == "/v1/responses":
		var req struct {
			Stream bool `json:"stream"`
		}
		json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req)
		resp := map[string]any{"id": "resp_deb", "object": "response", "status": "completed", "model": model,
			"output": []any{map[string]any{"type": "message", "role": "assistant",
				"content": []any{map[string]any{"type": "output_text", "text": "OK"}}}},
			"usage": map[string]any{"input_tokens": 12, "output_tokens": 3, "total_tokens": 15}}
		if !req.Stream {
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(resp)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		msg := resp["output"].([]any)[0].(map[string]any)
		msg["id"] = "msg_deb"
		for _, ev := range []map[string]any{{"type": "response.created", "response": map[string]any{"id": "resp_deb", "status": "in_progress"}},
			{"type": "response.output_item.added", "output_index": 0, "item": msg},
			{"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "item_id": "msg_deb", "delta": "OK"},
			{"type": "response.output_item.done", "output_index": 0, "item": msg},
			{"type": "response.completed", "response": resp}} {
			b, _ := json.Marshal(ev)
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev["type"], b)
		}
	default:
		http.NotFound(w, r)
	}
}
