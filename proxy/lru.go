package proxy

// lru is the relay's one least-recently-used order (the conversations' budget, the compaction
// store): its values, the most recently used first, each with the bytes it holds, and the bound
// those bytes should stay under (a row of the budgets' table, budgets.go). Its owner indexes the
// values as it needs (a value holds its entry) and guards it with its own lock. The zero lru is
// empty, with no room.
type lru[V any] struct {
	bound int64
	used  int64
	n     int
	root  lruEntry[V] // root.next is the most recently used entry, root.prev the least
}

// lruEntry is one value of an lru, and the bytes it holds.
type lruEntry[V any] struct {
	Value      V
	size       int64
	prev, next *lruEntry[V]
	in         *lru[V] // nil once removed
}

func (l *lru[V]) lazyInit() {
	if l.root.next == nil {
		l.root.next, l.root.prev = &l.root, &l.root
	}
}

// link puts e first (the most recently used).
func (l *lru[V]) link(e *lruEntry[V]) {
	e.prev, e.next = &l.root, l.root.next
	e.prev.next, e.next.prev = e, e
}

func unlink[V any](e *lruEntry[V]) {
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
}

// push adds v, holding size bytes, as the most recently used value.
func (l *lru[V]) push(v V, size int64) *lruEntry[V] {
	l.lazyInit()
	e := &lruEntry[V]{Value: v, size: size, in: l}
	l.link(e)
	l.n++
	l.used += size
	return e
}

// touch makes e the most recently used (Go's MoveToFront).
func (l *lru[V]) touch(e *lruEntry[V]) {
	if e == nil || e.in != l || l.root.next == e {
		return
	}
	unlink(e)
	l.link(e)
}

// grow counts n more bytes for e (fewer when negative).
func (l *lru[V]) grow(e *lruEntry[V], n int64) {
	e.size += n
	if e.in == l {
		l.used += n
	}
}

// remove takes e out, with its bytes; removing it again does nothing.
func (l *lru[V]) remove(e *lruEntry[V]) {
	if e == nil || e.in != l {
		return
	}
	unlink(e)
	e.in = nil
	l.n--
	l.used -= e.size
}

// count is the number of values; bytes what they hold; over whether that passes the bound.
func (l *lru[V]) count() int   { return l.n }
func (l *lru[V]) bytes() int64 { return l.used }
func (l *lru[V]) over() bool   { return l.used > l.bound }

// oldest is the least recently used entry (nil: none).
func (l *lru[V]) oldest() *lruEntry[V] {
	if l.n == 0 {
		return nil
	}
	return l.root.prev
}

// evict lets the least recently used values go, oldest first, while their bytes pass the bound
// and more than keep values are left: drop is told of each, and frees its bytes (remove, or grow
// it to nothing: a value may stay, holding none). It passes over the values spare keeps (nil:
// none) and visits each value once.
func (l *lru[V]) evict(keep int, spare func(V) bool, drop func(*lruEntry[V])) {
	for e := l.oldest(); e != nil && e != &l.root && l.over() && l.n > keep; {
		prev := e.prev // before drop, which may take e out
		if spare == nil || !spare(e.Value) {
			drop(e)
		}
		e = prev
	}
}
