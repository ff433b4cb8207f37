package responses

import "fmt"

// Tool is one tool a request offers, with the namespace it came in ("" at the top).
type Tool struct {
	Namespace string
	Def       map[string]any
}

// Name is the tool's name.
func (t Tool) Name() string {
	name, _ := t.Def["name"].(string)
	return name
}

// String is namespace/name:type, as the programs log the tools offered.
func (t Tool) String() string { return fmt.Sprintf("%s/%s:%v", t.Namespace, t.Name(), t.Def["type"]) }

// Offered lists the tools of tools (a request's top-level tools) and of the additional_tools
// items of input (Responses Lite), namespaces flattened, in that order.
func Offered(tools, input []any) []Tool {
	var out []Tool
	var walk func(ns string, list []any)
	walk = func(ns string, list []any) {
		for _, t := range list {
			m, ok := t.(map[string]any)
			if !ok {
				continue
			}
			if m["type"] == "namespace" {
				sub, _ := m["tools"].([]any)
				name, _ := m["name"].(string)
				walk(name, sub)
				continue
			}
			out = append(out, Tool{ns, m})
		}
	}
	walk("", tools)
	for _, it := range input {
		if m, ok := it.(map[string]any); ok && m["type"] == "additional_tools" {
			list, _ := m["tools"].([]any)
			walk("", list)
		}
	}
	return out
}

// Find returns the first tool of want (in want's order) that tools holds.
func Find(tools []Tool, want []string) (Tool, bool) {
	for _, w := range want {
		for _, t := range tools {
			if t.Def["name"] == w {
				return t, true
			}
		}
	}
	return Tool{}, false
}

// Call is a completed call of t: a custom_tool_call with args as its input if t is a custom
// tool, else a function_call with args as its arguments.
func Call(id, callID string, t Tool, args string) map[string]any {
	call := map[string]any{"type": "function_call", "id": id, "call_id": callID, "name": t.Name(), "status": "completed"}
	if t.Namespace != "" {
		call["namespace"] = t.Namespace
	}
	if t.Def["type"] == "custom" {
		call["type"] = "custom_tool_call"
		call["input"] = args
	} else {
		call["arguments"] = args
	}
	return call
}

// OnePixelPNG is a 1x1 PNG, base64: the image the fake backends' Images API answers.
const OnePixelPNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"

// WebScript is code mode's call of the tools Codex runs against the ChatGPT backend itself:
// web.run (a search), then image_gen.imagegen twice, a generation and an edit of red.png in the
// working folder (found with the shell, which also prints "hi").
const WebScript = `const s = await tools.web__run({search_query: [{q: "codex relay"}]}); text(JSON.stringify(s).slice(0, 200));
const i = await tools.image_gen__imagegen({prompt: "a small red square"}); text(i.output_hint || "image");
const d = await tools.exec_command({cmd: "echo hi && pwd"}); text(d.output);
const e = await tools.image_gen__imagegen({prompt: "make it blue", referenced_image_paths: [d.output.trim().split("\n").pop() + "/red.png"]}); text(e.output_hint || "edited");`
