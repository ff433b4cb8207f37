package tray

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// keepAliveConn opens a connection to the window API, sends one request on it (refused
// without the token) and reads the answer, leaving the connection open and idle.
func keepAliveConn(t *testing.T, base string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "GET /relay/stats HTTP/1.1\r\nHost: x\r\n\r\n")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("the window API did not answer: %v", err)
	}
	resp.Body.Close()
	return c, br
}

// Another local user's idle connections to the window API are bounded (issue 30, 11): past
// the cap a connection is closed at once, and an idle one is closed after the idle limit.
func TestTheWindowAPIBoundsItsConnections(t *testing.T) {
	oldMax, oldIdle := windowAPIMaxConns, windowAPIIdle
	windowAPIMaxConns, windowAPIIdle = 4, 200*time.Millisecond
	t.Cleanup(func() { windowAPIMaxConns, windowAPIIdle = oldMax, oldIdle })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	base, err := serveWindowAPI(ctx, &windowAPI{token: newToken()})
	if err != nil {
		t.Fatal(err)
	}
	// Idle past the limit: the relay closes it (the read ends before its 10 s deadline).
	c, br := keepAliveConn(t, base)
	if _, err := br.ReadByte(); err == nil || isTimeout(err) {
		t.Fatalf("an idle keep-alive connection stayed open: %v", err)
	}
	c.Close()

	windowAPIIdle = time.Minute // the cap, without the idle limit in the way
	cancel()
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	if base, err = serveWindowAPI(ctx, &windowAPI{token: newToken()}); err != nil {
		t.Fatal(err)
	}
	for range windowAPIMaxConns {
		keepAliveConn(t, base)
	}
	extra, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	extra.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(extra, "GET /relay/stats HTTP/1.1\r\nHost: x\r\n\r\n")
	if _, err := bufio.NewReader(extra).ReadByte(); err == nil || isTimeout(err) {
		t.Fatalf("a connection past the cap of %d was served: %v", windowAPIMaxConns, err)
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}
