package responses

import "strings"

// Message is a completed assistant message of one output_text part.
func Message(id, text string) map[string]any {
	return map[string]any{"type": "message", "id": id, "status": "completed", "role": "assistant",
		"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}}
}

// Reasoning is a reasoning item with no summary and the given sealed (encrypted) content.
func Reasoning(id, sealed string) map[string]any {
	return map[string]any{"type": "reasoning", "id": id, "summary": []any{}, "encrypted_content": sealed}
}

// HasItem reports whether items (a request's input) holds an item of type typ.
func HasItem(items []any, typ string) bool {
	for _, it := range items {
		if m, ok := it.(map[string]any); ok && m["type"] == typ {
			return true
		}
	}
	return false
}

// LastItemType is the type of the last item of items ("" when there is none).
func LastItemType(items []any) string {
	if len(items) == 0 {
		return ""
	}
	m, _ := items[len(items)-1].(map[string]any)
	t, _ := m["type"].(string)
	return t
}

// LastUserText is the text of the last user message of items ("" when there is none).
func LastUserText(items []any) string {
	for i := len(items) - 1; i >= 0; i-- {
		m, _ := items[i].(map[string]any)
		if m["type"] != "message" && m["role"] == nil || m["role"] != "user" {
			continue
		}
		var b strings.Builder
		switch c := m["content"].(type) {
		case string:
			b.WriteString(c)
		case []any:
			for _, p := range c {
				if pm, ok := p.(map[string]any); ok {
					if t, ok := pm["text"].(string); ok {
						b.WriteString(t)
					}
				}
			}
		}
		return b.String()
	}
	return ""
}
