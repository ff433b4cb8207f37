package tray

import (
	"bufio"
	"context"
	"fmt"
	"io"
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
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return c, br
}

// The window process's connections to the window API are bounded (issue 30, 11): one that
// carried the token past the cap is closed after its answer, and an idle one after the idle limit.
func TestTheWindowAPIBoundsItsConnections(t *testing.T) {
	oldMax, oldIdle := windowAPIMaxConns, windowAPIIdle
	windowAPIMaxConns, windowAPIIdle = 4, 200*time.Millisecond
	t.Cleanup(func() { windowAPIMaxConns, windowAPIIdle = oldMax, oldIdle })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := &windowAPI{token: newToken()}
	base, err := serveWindowAPI(ctx, first)
	if err != nil {
		t.Fatal(err)
	}
	// Idle past the limit: the relay closes it (the read ends before its 10 s deadline).
	c := proven(t, base, first.token)
	if _, err := c.br.ReadByte(); err == nil || isTimeout(err) {
		t.Fatalf("an idle keep-alive connection stayed open: %v", err)
	}
	c.Close()

	windowAPIIdle = time.Minute // the cap, without the idle limit in the way
	cancel()
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	api := &windowAPI{token: newToken()}
	if base, err = serveWindowAPI(ctx, api); err != nil {
		t.Fatal(err)
	}
	for range windowAPIMaxConns {
		proven(t, base, api.token)
	}
	extra := proven(t, base, api.token)
	if _, err := extra.br.ReadByte(); err == nil || isTimeout(err) {
		t.Fatalf("a connection past the cap of %d was kept: %v", windowAPIMaxConns, err)
	}
}

// provenConn is a connection that carried the token, open and idle after its answer.
type provenConn struct {
	net.Conn
	br *bufio.Reader
}

// proven opens a connection to the window API and sends a request with the token on it.
func proven(t *testing.T, base, token string) provenConn {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "GET /nothing HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", token)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("the window API did not answer the token's holder: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode == http.StatusUnauthorized {
		t.Fatal("the token was refused")
	}
	return provenConn{c, br}
}

// Another local user cannot keep the window process out (issue 50): a request without the token
// has its connection closed with the answer, a connection that sends nothing is closed after
// the header wait, and connections that never carried the token, as many as the cap and more,
// hold no place: the token's holder still gets in, on a new connection.
func TestConnectionsWithoutTheTokenHoldNoPlace(t *testing.T) {
	oldMax, oldWait := windowAPIMaxConns, windowAPIHeaderWait
	windowAPIMaxConns, windowAPIHeaderWait = 4, 300*time.Millisecond
	t.Cleanup(func() { windowAPIMaxConns, windowAPIHeaderWait = oldMax, oldWait })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	api := &windowAPI{token: newToken()}
	base, err := serveWindowAPI(ctx, api)
	if err != nil {
		t.Fatal(err)
	}
	// A refused keep-alive: the answer, then the connection closes.
	_, br := keepAliveConn(t, base)
	if _, err := br.ReadByte(); err == nil || isTimeout(err) {
		t.Fatalf("a refused connection stayed open: %v", err)
	}
	// A connection that sends nothing is closed after the header wait.
	silent, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	silent.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := silent.Read(make([]byte, 1)); err == nil || isTimeout(err) {
		t.Fatalf("a silent connection stayed open: %v", err)
	}
	// Twice the cap of silent connections at once, then the token's holder.
	windowAPIHeaderWait = time.Minute
	cancel()
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	if base, err = serveWindowAPI(ctx, api); err != nil {
		t.Fatal(err)
	}
	for range 2 * windowAPIMaxConns {
		c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
	}
	proven(t, base, api.token)
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}
