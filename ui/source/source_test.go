package source

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codexrelay/codexrelay/proxy"
)

// follower runs Follow over a Signal and counts the shows.
type follower struct {
	sig   proxy.Signal
	poke  chan struct{}
	shows atomic.Int64
	// seen is the generation each show saw.
	mu   sync.Mutex
	seen []uint64
	// again is what show returns: how long until the clock changes what it shows.
	again atomic.Int64
}

func startFollower(t *testing.T, gap, every, again time.Duration) *follower {
	f := &follower{poke: make(chan struct{}, 1)}
	f.again.Store(int64(again))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		Follow(ctx, f.sig.Changes, f.poke, gap, every, func() time.Duration {
			g, _ := f.sig.Changes()
			f.mu.Lock()
			f.seen = append(f.seen, g)
			f.mu.Unlock()
			f.shows.Add(1)
			return time.Duration(f.again.Load())
		})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("Follow did not return after its context ended")
		}
	})
	return f
}

func waitShows(t *testing.T, f *follower, n int64, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for f.shows.Load() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d shows after 10 s, want %d", what, f.shows.Load(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestFollowSleepsUntilSomethingChanges(t *testing.T) {
	f := startFollower(t, 20*time.Millisecond, time.Hour, 0)
	waitShows(t, f, 1, "the first show")
	time.Sleep(150 * time.Millisecond) // many gaps: nothing changed, nothing is shown
	if n := f.shows.Load(); n != 1 {
		t.Fatalf("%d shows with nothing changed", n)
	}
	f.sig.Raise()
	waitShows(t, f, 2, "a change")
	f.poke <- struct{}{}
	waitShows(t, f, 3, "a poke")
}

// A burst of changes is shown a few times, not once per change, and its last state is shown.
func TestFollowShowsABurstTogether(t *testing.T) {
	f := startFollower(t, 50*time.Millisecond, time.Hour, 0)
	waitShows(t, f, 1, "the first show")
	for range 1000 {
		f.sig.Raise()
	}
	last, _ := f.sig.Changes()
	deadline := time.Now().Add(10 * time.Second)
	for {
		f.mu.Lock()
		got := f.seen[len(f.seen)-1]
		f.mu.Unlock()
		if got == last {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the last change (%d) was never shown; last shown %d", last, got)
		}
		time.Sleep(time.Millisecond)
	}
	if n := f.shows.Load(); n > 3 {
		t.Fatalf("1000 changes at once were shown %d times", n)
	}
}

// What changes with the clock is shown when show says it will have changed.
func TestFollowShowsAgainWhenTheClockChangesWhatItShows(t *testing.T) {
	ff := startFollower(t, time.Millisecond, time.Hour, 30*time.Millisecond)
	waitShows(t, ff, 3, "shows at the times show named")
	ff.again.Store(0) // no time: only changes (and every) show again
	time.Sleep(100 * time.Millisecond)
	n := ff.shows.Load()
	time.Sleep(100 * time.Millisecond)
	if m := ff.shows.Load(); m != n {
		t.Fatalf("%d shows without a change or a time", m-n)
	}
}

// every bounds the sleep.
func TestFollowShowsAtLeastEvery(t *testing.T) {
	f := startFollower(t, time.Millisecond, 20*time.Millisecond, 0)
	waitShows(t, f, 4, "shows every 20 ms")
}
