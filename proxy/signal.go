package proxy

import "sync/atomic"

// Signal tells those who wait that something changed, so that they sleep until it does
// rather than poll. Raise costs an atomic add when nobody waits, so the request path raises
// it freely; a nil *Signal does nothing.
//
// A waiter reads Changes: the generation now and a channel that closes at the next Raise.
// When the generation differs from the one it last showed, it reads again at once; otherwise
// it waits on the channel. (A Raise between the two reads closes the channel it got: at worst
// one needless read, never a missed change.)
type Signal struct {
	gen atomic.Uint64
	ch  atomic.Pointer[chan struct{}]
}

// Raise says that something changed.
func (s *Signal) Raise() {
	if s == nil {
		return
	}
	s.gen.Add(1)
	if ch := s.ch.Swap(nil); ch != nil {
		close(*ch)
	}
}

// Changes returns the generation now and a channel that closes at the next Raise.
func (s *Signal) Changes() (uint64, <-chan struct{}) {
	for {
		if ch := s.ch.Load(); ch != nil {
			return s.gen.Load(), *ch
		}
		ch := make(chan struct{})
		if s.ch.CompareAndSwap(nil, &ch) {
			return s.gen.Load(), ch
		}
	}
}
