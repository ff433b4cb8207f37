// Package testkit holds what the relay's tests and benchmarks share: a synthetic Codex
// request body that stands for the real ones.
package testkit

import (
	"encoding/json"
	"strconv"
)

// Synthetic body content. The texts are fixed so the body is byte for byte reproducible.
const (
	benchInstructions = "You are Codex, a coding agent running in a terminal-based assistant. " +
		"You read files, run commands and edit code in the user's workspace to complete the task. " +
		"Keep going until the task is fully resolved before ending your turn. Prefer small, reviewable changes, " +
		"follow the existing style of the repository, and run the relevant tests when you can. " +
		"When you are unsure about the intent, state your assumptions explicitly instead of asking repeatedly."
	benchTools = `[{"type":"function","name":"shell","description":"Runs a shell command and returns its output.",` +
		`"strict":false,"parameters":{"type":"object","properties":{"command":{"type":"array","items":{"type":"string"},` +
		`"description":"The command to execute"},"workdir":{"type":"string","description":"The working directory"},` +
		`"timeout_ms":{"type":"number","description":"The timeout for the command in milliseconds"}},"required":["command"],` +
		`"additionalProperties":false}},` +
		`{"type":"function","name":"apply_patch","description":"Applies a patch to files in the workspace.",` +
		`"strict":false,"parameters":{"type":"object","properties":{"input":{"type":"string","description":"The patch to apply"}},` +
		`"required":["input"],"additionalProperties":false}},` +
		`{"type":"function","name":"update_plan","description":"Updates the task plan.","strict":false,` +
		`"parameters":{"type":"object","properties":{"explanation":{"type":"string"},"plan":{"type":"array","items":` +
		`{"type":"object","properties":{"step":{"type":"string"},"status":{"type":"string","enum":["pending","in_progress","completed"]}},` +
		`"required":["step","status"],"additionalProperties":false}}},"required":["plan"],"additionalProperties":false}},` +
		`{"type":"function","name":"view_image","description":"Attaches a local image to the conversation.","strict":false,` +
		`"parameters":{"type":"object","properties":{"path":{"type":"string","description":"Local filesystem path to an image file"}},` +
		`"required":["path"],"additionalProperties":false}}]`
)

// benchWords feeds the message texts.
var benchWords = []string{"the", "router", "retries", "request", "with", "next", "account", "after", "a", "429",
	"payload", "window", "stays", "immutable", "while", "tokens", "stream", "back", "to", "client"}

// SyntheticResponsesBody returns a Codex-shaped Responses request whose input holds items stable
// items: user and assistant messages alternating with shell function calls and their outputs.
// With items = 10000 it is about 1.16 MB, the size of the original measurement. The result is
// deterministic and valid.
func SyntheticResponsesBody(items int) []byte {
	b := make([]byte, 0, 8<<10+items*120)
	b = append(b, `{"model":"gpt-5-codex","instructions":`...)
	b = appendString(b, benchInstructions)
	b = append(b, `,"tools":`...)
	b = append(b, benchTools...)
	b = append(b, `,"tool_choice":"auto","parallel_tool_calls":false,"reasoning":{"effort":"medium","summary":"auto"},`+
		`"store":false,"stream":true,"include":["reasoning.encrypted_content"],`+
		`"prompt_cache_key":"0f6e3c1a-5b2d-4e8f-9a7c-1d2e3f4a5b6c","input":[`...)
	for i := range items {
		if i > 0 {
			b = append(b, ',')
		}
		id := strconv.Itoa(100000 + i/8)
		switch i % 8 {
		case 0, 2, 4: // user message
			b = append(b, `{"type":"message","role":"user","content":[{"type":"input_text","text":`...)
			b = appendString(b, Text(i, 32))
			b = append(b, `}]}`...)
		case 1, 3, 7: // assistant message
			b = append(b, `{"type":"message","role":"assistant","content":[{"type":"output_text","text":`...)
			b = appendString(b, Text(i, 32))
			b = append(b, `}]}`...)
		case 5: // the assistant runs a command
			b = append(b, `{"type":"function_call","name":"shell","call_id":"call_`+id+`","arguments":`...)
			b = appendString(b, `{"command":["bash","-lc","sed -n 1,80p internal/router/file_`+id+`.go"]}`)
			b = append(b, '}')
		case 6: // and reads its output
			b = append(b, `{"type":"function_call_output","call_id":"call_`+id+`","output":`...)
			b = appendString(b, "exit 0\n"+Text(i, 19))
			b = append(b, '}')
		}
	}
	return append(b, "]}"...)
}

// Text returns n bytes of words, varying with i: deterministic filler for synthetic bodies.
func Text(i, n int) string {
	var b []byte
	for k := i; len(b) < n; k += 7 {
		b = append(b, benchWords[k%len(benchWords)]...)
		b = append(b, ' ')
	}
	return string(b[:n])
}

// appendString appends s as a JSON string.
func appendString(b []byte, s string) []byte {
	q, _ := json.Marshal(s)
	return append(b, q...)
}
