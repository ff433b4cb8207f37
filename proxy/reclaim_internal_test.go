package proxy

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The reclaimer collects once after a busy spell and never while the relay stays idle: it has
// no ticker, only a timer the request that leaves the relay idle arms.
func TestReclaimerCollectsOncePerBusySpell(t *testing.T) {
	s := New(Options{IdleReclaim: 20 * time.Millisecond})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln, time.Second) }()
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return")
		}
	}()
	count := func() int {
		s.reclaimer.mu.Lock()
		defer s.reclaimer.mu.Unlock()
		return s.reclaimer.count
	}
	wait := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	time.Sleep(100 * time.Millisecond) // five reclaim delays with nothing served
	if n := count(); n != 0 {
		t.Fatalf("%d collections before any request", n)
	}
	request := func() {
		resp, err := http.Post("http://"+ln.Addr().String()+"/v1/nothing-here", "application/json", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	request()
	request()
	wait("a collection after the busy spell", func() bool { return count() == 1 })
	time.Sleep(100 * time.Millisecond)
	if n := count(); n != 1 {
		t.Fatalf("%d collections after one busy spell, want 1", n)
	}
	request()
	wait("a collection after the second spell", func() bool { return count() == 2 })
}
