package proxy

import (
	"slices"
	"testing"
)

// values lists l's values, the most recently used first.
func (l *lru[V]) values() []V {
	var out []V
	for e := l.root.next; e != nil && e != &l.root; e = e.next {
		out = append(out, e.Value)
	}
	return out
}

// The LRU counts its values' bytes, orders them by use, and evicts the least recently used
// first while over its bound: passing over the values spared, keeping the last ones asked for,
// and letting drop leave a value in place holding nothing.
func TestLRUOrderBytesAndEviction(t *testing.T) {
	l := lru[string]{bound: 10}
	a, b, c := l.push("a", 4), l.push("b", 4), l.push("c", 4)
	if got := l.values(); !slices.Equal(got, []string{"c", "b", "a"}) || l.bytes() != 12 || l.count() != 3 || !l.over() {
		t.Fatalf("after pushes: %v, %d bytes, %d values", got, l.bytes(), l.count())
	}
	l.touch(a)
	l.grow(b, 2)
	if got := l.values(); !slices.Equal(got, []string{"a", "c", "b"}) || l.bytes() != 14 {
		t.Fatalf("after touch and grow: %v, %d bytes", got, l.bytes())
	}
	var dropped []string
	drop := func(e *lruEntry[string]) { dropped = append(dropped, e.Value); l.remove(e) }
	l.evict(0, func(v string) bool { return v == "b" }, drop) // b is spared: c goes, then enough
	if !slices.Equal(dropped, []string{"c"}) || l.bytes() != 10 || l.over() {
		t.Fatalf("evicted %v, %d bytes left", dropped, l.bytes())
	}
	l.remove(c) // removed already: nothing
	if l.bytes() != 10 || l.count() != 2 {
		t.Fatalf("a second remove changed the count: %d bytes, %d values", l.bytes(), l.count())
	}
	l.grow(a, 20)
	l.evict(1, nil, drop) // b goes, a stays however large
	if !slices.Equal(dropped, []string{"c", "b"}) || !slices.Equal(l.values(), []string{"a"}) || l.bytes() != 24 {
		t.Fatalf("with one kept: evicted %v, left %v, %d bytes", dropped, l.values(), l.bytes())
	}
	d := l.push("d", 0)
	l.evict(0, nil, func(e *lruEntry[string]) { l.grow(e, -e.size) }) // a value may stay, empty
	if l.count() != 2 || l.bytes() != 0 || d.in != &l {
		t.Fatalf("emptied in place: %d values, %d bytes", l.count(), l.bytes())
	}
}
