package bridge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
)

// The OpenResponses compliance suite (openresponses/openresponses, src/lib/compliance-tests.ts)
// parses every Response object it gets, and every stream event, with zod schemas generated
// from its public/openapi/openapi.json. testdata/openresponses/schemas.json holds the part of
// that document's components.schemas those checks reach (ResponseResource and the stream events
// the bridge writes, with every schema they refer to), stripped of what does not validate
// (descriptions, titles, examples, defaults); see testdata/openresponses/README.md.
//
// schemaCheck reads it the way the suite's zod schemas do:
//   - a required member must be present (null only where the schema allows null);
//   - anyOf and oneOf are unions: one branch must hold (zod's union; not JSON Schema's
//     "exactly one" for oneOf);
//   - members the schema does not name are allowed (zod strips them);
//   - "integer" is a number without a fraction.
//
// It is stricter than zod in one way: a required member whose zod schema has a default (an
// item's "type", the response's "object") must be present too; the API always writes them.

var (
	openResponsesOnce    sync.Once
	openResponsesSchemas map[string]any
	openResponsesErr     error
)

func openResponses(t *testing.T) map[string]any {
	t.Helper()
	openResponsesOnce.Do(func() {
		raw, err := os.ReadFile("testdata/openresponses/schemas.json")
		if err != nil {
			openResponsesErr = err
			return
		}
		openResponsesErr = json.Unmarshal(raw, &openResponsesSchemas)
	})
	if openResponsesErr != nil {
		t.Fatalf("the OpenResponses schemas: %v", openResponsesErr)
	}
	return openResponsesSchemas
}

// checkSchema returns why data (one JSON value) does not satisfy the named schema: one line per
// failure, each with its path, or nil.
func checkSchema(t *testing.T, name string, data []byte) []string {
	t.Helper()
	schemas := openResponses(t)
	if _, ok := schemas[name]; !ok {
		t.Fatalf("no schema %s", name)
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return []string{"not JSON: " + err.Error()}
	}
	return schemaCheck{schemas}.check(map[string]any{"$ref": "#/components/schemas/" + name}, v, "")
}

type schemaCheck struct{ schemas map[string]any }

func (c schemaCheck) check(s map[string]any, v any, path string) []string {
	if ref, ok := s["$ref"].(string); ok {
		name := strings.TrimPrefix(ref, "#/components/schemas/")
		target, ok := c.schemas[name].(map[string]any)
		if !ok {
			return []string{path + ": unknown schema " + ref}
		}
		return c.check(target, v, path)
	}
	var errs []string
	if all, ok := s["allOf"].([]any); ok {
		for _, sub := range all {
			errs = append(errs, c.check(sub.(map[string]any), v, path)...)
		}
	}
	for _, key := range []string{"anyOf", "oneOf"} {
		branches, ok := s[key].([]any)
		if !ok {
			continue
		}
		var closest []string
		held := false
		for _, b := range branches {
			e := c.check(b.(map[string]any), v, path)
			if len(e) == 0 {
				held = true
				break
			}
			if closest == nil || len(e) < len(closest) {
				closest = e
			}
		}
		if !held {
			errs = append(errs, fmt.Sprintf("%s: no branch of %s holds; closest: %s", where(path), key, strings.Join(closest, "; ")))
		}
	}
	if typ, ok := s["type"].(string); ok && !ofType(v, typ) {
		return append(errs, fmt.Sprintf("%s: %s, want %s", where(path), brief(v), typ))
	}
	if enum, ok := s["enum"].([]any); ok {
		found := false
		for _, e := range enum {
			found = found || reflect.DeepEqual(e, v)
		}
		if !found {
			errs = append(errs, fmt.Sprintf("%s: %s is not one of %v", where(path), brief(v), enum))
		}
	}
	if obj, ok := v.(map[string]any); ok {
		if req, ok := s["required"].([]any); ok {
			for _, k := range req {
				if _, present := obj[k.(string)]; !present {
					errs = append(errs, fmt.Sprintf("%s: required member missing", where(path+"."+k.(string))))
				}
			}
		}
		if props, ok := s["properties"].(map[string]any); ok {
			keys := make([]string, 0, len(props))
			for k := range props {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				if mv, present := obj[k]; present {
					errs = append(errs, c.check(props[k].(map[string]any), mv, path+"."+k)...)
				}
			}
		}
	}
	if arr, ok := v.([]any); ok {
		if items, ok := s["items"].(map[string]any); ok {
			for i, it := range arr {
				errs = append(errs, c.check(items, it, fmt.Sprintf("%s[%d]", path, i))...)
			}
		}
	}
	return errs
}

func where(path string) string {
	if path == "" {
		return "(root)"
	}
	return strings.TrimPrefix(path, ".")
}

func ofType(v any, typ string) bool {
	switch typ {
	case "null":
		return v == nil
	case "string":
		_, ok := v.(string)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "number":
		_, ok := v.(float64)
		return ok
	case "integer":
		f, ok := v.(float64)
		return ok && f == math.Trunc(f)
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	}
	return false
}

func brief(v any) string {
	if v == nil {
		return "null"
	}
	b, _ := json.Marshal(v)
	if len(b) > 60 {
		b = append(b[:57], "..."...)
	}
	return string(b)
}

// streamEventSchemas names the schema of each stream event the bridge writes, as the suite's
// sse-parser picks it (by the union of all event schemas; here by the event's type).
var streamEventSchemas = map[string]string{
	"response.created":                       "ResponseCreatedStreamingEvent",
	"response.in_progress":                   "ResponseInProgressStreamingEvent",
	"response.completed":                     "ResponseCompletedStreamingEvent",
	"response.failed":                        "ResponseFailedStreamingEvent",
	"response.incomplete":                    "ResponseIncompleteStreamingEvent",
	"response.output_item.added":             "ResponseOutputItemAddedStreamingEvent",
	"response.output_item.done":              "ResponseOutputItemDoneStreamingEvent",
	"response.content_part.added":            "ResponseContentPartAddedStreamingEvent",
	"response.content_part.done":             "ResponseContentPartDoneStreamingEvent",
	"response.output_text.delta":             "ResponseOutputTextDeltaStreamingEvent",
	"response.output_text.done":              "ResponseOutputTextDoneStreamingEvent",
	"response.refusal.delta":                 "ResponseRefusalDeltaStreamingEvent",
	"response.refusal.done":                  "ResponseRefusalDoneStreamingEvent",
	"response.function_call_arguments.delta": "ResponseFunctionCallArgumentsDeltaStreamingEvent",
	"response.function_call_arguments.done":  "ResponseFunctionCallArgumentsDoneStreamingEvent",
}

// checkStreamEvent checks one event's data against the schema of its type.
func checkStreamEvent(t *testing.T, ev Event) []string {
	t.Helper()
	name, ok := streamEventSchemas[ev.Name]
	if !ok {
		return []string{"event " + ev.Name + " has no OpenResponses schema"}
	}
	var typ struct{ Type string }
	if json.Unmarshal(ev.Data, &typ) != nil || typ.Type != ev.Name {
		return []string{fmt.Sprintf("event %s carries type %q", ev.Name, typ.Type)}
	}
	return checkSchema(t, name, ev.Data)
}

// TestSchemaCheckReadsTheSuite checks the checker itself: the suite's own fixture (the
// Response its response-output-phase-schema case parses without a request) holds, and taking
// from it what the suite would miss fails, at the right path.
func TestSchemaCheckReadsTheSuite(t *testing.T) {
	fixture, err := os.ReadFile("testdata/openresponses/response-output-phase-schema.json")
	if err != nil {
		t.Fatal(err)
	}
	if errs := checkSchema(t, "ResponseResource", fixture); errs != nil {
		t.Fatalf("the suite's fixture fails: %v", errs)
	}
	withTool := func(tool string) []byte {
		return bytes.Replace(fixture, []byte(`"tools": []`), []byte(`"tools": [`+tool+`]`), 1)
	}
	for _, c := range []struct {
		name string
		obj  []byte
		want string // a failure naming this, or "" for none
	}{
		{"a whole function tool", withTool(`{"type":"function","name":"f","description":null,"parameters":null,"strict":true}`), ""},
		{"a function tool without strict", withTool(`{"type":"function","name":"f","description":"d","parameters":{}}`), "tools[0].strict: required member missing"},
		{"strict of another type", withTool(`{"type":"function","name":"f","description":"d","parameters":{},"strict":"yes"}`), "tools[0].strict"},
		{"no tools", bytes.Replace(fixture, []byte(`"tools": [],`), nil, 1), "tools: required member missing"},
		{"a fractional created_at", bytes.Replace(fixture, []byte(`1764967971`), []byte(`1764967971.5`), 1), "created_at: 1764967971.5, want integer"},
		{"usage without details", bytes.Replace(fixture, []byte(`"input_tokens_details": {`), []byte(`"x": {`), 1), "usage"},
		{"a null usage", bytes.Replace(fixture, []byte(`"usage": {`), []byte(`"usage": null, "u": {`), 1), ""},
	} {
		errs := checkSchema(t, "ResponseResource", c.obj)
		switch {
		case c.want == "" && errs != nil:
			t.Errorf("%s: %v", c.name, errs)
		case c.want != "" && !strings.Contains(strings.Join(errs, "\n"), c.want):
			t.Errorf("%s: failures %v, want one naming %q", c.name, errs, c.want)
		}
	}
}
