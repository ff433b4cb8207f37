package responses

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
)

// Marshal is json.Marshal without HTML escaping.
func Marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	err := e.Encode(v)
	return bytes.TrimSpace(b.Bytes()), err
}

// JSON is Marshal of a value that must marshal (it panics otherwise).
func JSON(v any) []byte {
	b, err := Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// WriteSSE answers 200 with the events as a text/event-stream ("event: TYPE", "data: JSON"),
// flushing after each. Headers set on w before it are sent with it.
func WriteSSE(w http.ResponseWriter, evs []map[string]any) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
	fl, _ := w.(http.Flusher)
	for _, ev := range evs {
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev["type"], JSON(ev))
		if fl != nil {
			fl.Flush()
		}
	}
}
