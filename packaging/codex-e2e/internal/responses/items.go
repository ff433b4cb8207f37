package responses

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
