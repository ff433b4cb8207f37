package proxy

import (
	"testing"

	"github.com/codexrelay/codexrelay/proxy/payload"
)

// BenchmarkSealedTracking is what the tracking adds to one small Codex turn that stayed on its
// account: learning the sealed item of its answer, and the look-up that finds nothing to leave
// out. (`bench proxy` measures the same end to end, on against off.)
func BenchmarkSealedTracking(b *testing.B) {
	s := New(Options{})
	s.SetAccounts([]Account{{Name: "a", Kind: KindOpenAI, BaseURL: "http://127.0.0.1:1/v1", Credentials: Static{Token: "sk-a"}}})
	m := s.pool.List()[0]
	answer := []byte(`{"type":"response.output_item.done","sequence_number":1,"output_index":0,"item":{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gAAAABbench-own-0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz="}}`)
	obj, _ := payload.Parse([]byte(`{"model":"m","input":[{"type":"message","role":"user","content":"hi"}]}`))
	x := &exchange{s: s, req: &clientRequest{obj: obj, session: "conv-1"}, body: &clientBody{obj: obj}}
	x.learnEvent(m, "response.output_item.done", answer)
	b.ReportAllocs()
	for b.Loop() {
		x.learnEvent(m, "response.output_item.done", answer)
		x.inputFor(m, x.body.items, false)
	}
}

// BenchmarkSealedTrackingMultiAgent is the same for a multi-agent turn that stayed: the
// account's answer carries its spawn_agent call (a sealed argument named by
// encrypted_function_args) and the request the sub-agent's task with the same sealed value.
func BenchmarkSealedTrackingMultiAgent(b *testing.B) {
	s := New(Options{})
	s.SetAccounts([]Account{{Name: "a", Kind: KindOpenAI, BaseURL: "http://127.0.0.1:1/v1", Credentials: Static{Token: "sk-a"}}})
	m := s.pool.List()[0]
	answer := []byte(`{"type":"response.output_item.done","sequence_number":1,"output_index":0,"item":{"type":"function_call","id":"fc_s","call_id":"call_s","namespace":"collaboration","name":"spawn_agent","arguments":"{\"message\":\"gAAAABbench-own-task-0123456789abcdefghijklmnopqrstuvwxyz=\",\"task_name\":\"helper\"}","encrypted_function_args":["message"]}}`)
	obj, _ := payload.Parse([]byte(`{"model":"m","input":[{"type":"agent_message","author":"/root","recipient":"/root/helper","content":[{"type":"input_text","text":"task"},{"type":"encrypted_content","encrypted_content":"gAAAABbench-own-task-0123456789abcdefghijklmnopqrstuvwxyz="}]}]}`))
	x := &exchange{s: s, req: &clientRequest{obj: obj, session: "conv-1"}, body: &clientBody{obj: obj}}
	x.learnEvent(m, "response.output_item.done", answer)
	b.ReportAllocs()
	for b.Loop() {
		x.learnEvent(m, "response.output_item.done", answer)
		x.inputFor(m, x.body.items, false)
	}
}
