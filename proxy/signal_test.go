package proxy

import (
	"runtime"
	"sync"
	"testing"
	"time"
)

func TestSignalWakesEveryWaiterOnceAndMissesNoRaise(t *testing.T) {
	var s Signal
	g0, ch := s.Changes()
	select {
	case <-ch:
		t.Fatal("the channel closed before any Raise")
	default:
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-ch
		}()
	}
	s.Raise()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("a waiter was not woken by Raise")
	}
	g1, ch1 := s.Changes()
	if g1 != g0+1 {
		t.Fatalf("generation %d after one Raise from %d", g1, g0)
	}
	select {
	case <-ch1:
		t.Fatal("a new channel is closed already")
	default:
	}
	// Raises while nobody waits still move the generation: a waiter that compares it does not
	// wait for a change it missed.
	s.Raise()
	s.Raise()
	if g, _ := s.Changes(); g != g1+2 {
		t.Fatalf("generation %d, want %d", g, g1+2)
	}
	var nilSignal *Signal
	nilSignal.Raise() // does nothing, does not panic
}

// Concurrent raisers and waiters: every waiter is woken, and the generation never goes back
// (a wake may come with the generation it read: a Raise between its two reads; run under -race).
func TestSignalUnderConcurrentRaises(t *testing.T) {
	var s Signal
	stop := make(chan struct{})
	var raisers sync.WaitGroup
	for range 2 {
		raisers.Add(1)
		go func() {
			defer raisers.Done()
			for {
				select {
				case <-stop:
					return
				default:
					s.Raise()
					runtime.Gosched()
				}
			}
		}()
	}
	deadline := time.After(10 * time.Second)
	for i := range 500 {
		g, ch := s.Changes()
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("waiter %d was never woken while others raised", i)
		}
		if g2, _ := s.Changes(); g2 < g {
			t.Fatalf("woken with generation %d, below the %d read before", g2, g)
		}
	}
	close(stop)
	raisers.Wait()
}
