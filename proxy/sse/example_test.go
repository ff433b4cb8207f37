package sse_test

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/codexrelay/codexrelay/proxy/sse"
)

// A relay loop: forward every event byte for byte, flush when no more bytes are waiting, and
// look at the event names on the way.
func Example() {
	upstream := strings.NewReader("event: response.created\ndata: {}\n\n" +
		": keep-alive\n\n" +
		"event: response.output_text.delta\ndata: {\"delta\":\"Hi\"}\n\n" +
		"event: response.output_text.delta\ndata: {\"delta\":\"!\"}\n\n")
	client := bufio.NewWriter(os.Stdout)

	r := sse.NewReader(upstream, 16<<20)
	completed := false
	for {
		ev, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "upstream:", err) // ErrTruncated, ErrTooLarge or a read error
			break
		}
		completed = completed || ev.Name == "response.completed"
		client.Write(ev.Raw) // the bytes exactly as received
		if r.Buffered() == 0 {
			client.Flush() // nothing else is waiting: let the client see what it has
		}
	}
	if !completed {
		// The stream ended without response.completed: tell the client.
		client.Write(sse.AppendEvent(nil, "response.failed", []byte(`{"type":"response.failed"}`)))
	}
	client.Flush()
	// Output:
	// event: response.created
	// data: {}
	//
	// : keep-alive
	//
	// event: response.output_text.delta
	// data: {"delta":"Hi"}
	//
	// event: response.output_text.delta
	// data: {"delta":"!"}
	//
	// event: response.failed
	// data: {"type":"response.failed"}
}
