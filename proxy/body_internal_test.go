package proxy

import (
	"bytes"
	"errors"
	"io"
	"sync"
	"testing"
)

func TestBodyReaderClosedWhileReading(t *testing.T) {
	// The HTTP/2 transport may close a request body from another goroutine while a Read is
	// copying from it. The buffer must go back to the pool once, after the copy, and reads
	// after the close must fail rather than see a buffer another request may be refilling.
	for range 200 {
		sb := &sharedBuffer{b: getBodyBuffer(1 << 20)[:1<<20]}
		sb.refs.Store(2) // the exchange's reference and the body's
		r := &bodyReader{r: bytes.NewReader(sb.b), sb: sb}
		var wg sync.WaitGroup
		wg.Add(1)
		var readErr error
		go func() {
			defer wg.Done()
			p := make([]byte, 4096)
			for {
				if _, err := r.Read(p); err != nil {
					readErr = err
					return
				}
			}
		}()
		r.Close()
		r.Close() // a second close releases nothing more
		wg.Wait()
		if readErr != io.EOF && !errors.Is(readErr, errBodyClosed) {
			t.Fatalf("read error %v", readErr)
		}
		if got := sb.refs.Load(); got != 1 {
			t.Fatalf("%d references left, want the exchange's 1", got)
		}
		if _, err := r.Read(make([]byte, 1)); !errors.Is(err, errBodyClosed) {
			t.Fatalf("read after close: %v", err)
		}
		sb.release()
	}
}
