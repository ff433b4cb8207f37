package payload

import (
	"bytes"
	"unsafe"
)

// DirectBelow is the body size (in bytes, estimated as Object.Size) under which Body always
// builds directly: for small bodies a full build is cheaper than building and comparing a key.
const DirectBelow = 64 << 10

// maxEntries bounds how many built bodies one Cache keeps. A request normally needs one (every
// account gets the same variant); a few more cover alternating variants without letting a long
// rotation over many models hold dozens of copies of a 64 MiB body.
const maxEntries = 4

// Cache is the per-request serialization cache: when an account fails and the request is sent
// to the next account, the upstream body already built for the previous attempt is reused
// instead of copying the whole input window again.
//
// The large immutable member (the Responses "input" array) is identified by its raw value's
// identity, the address and length of the slice, never by content; everything else (other
// members and all overrides) forms the variant key: the serialization of every other member.
// Any change of model, tools, instructions, reasoning or of a value added by routing therefore
// misses automatically. The key is never materialised: a stored body already is that
// serialization with the input in it, so a lookup compares the would-be serialization against
// the stored body piece by piece, skipping the input's span. A first attempt thus costs nothing
// over a plain build, and a hit costs one comparison of the small members.
//
// Create one Cache per incoming client request and never share it between requests, so a
// window can never be reused for another conversation. A Cache is not safe for concurrent use.
type Cache struct {
	// Alloc, when set, provides the buffer a body is built into (an empty slice with at least
	// the capacity asked for) and a handle of the caller's that names it, so that a caller can
	// reuse memory across requests and knows which of its buffers holds a body (BodyIn). A body
	// that does not fit is built into a new allocation instead, with no handle.
	Alloc func(capacity int) (buf []byte, handle any)

	disabled  bool
	stats     Stats
	entries   []cacheEntry
	store     [maxEntries]cacheEntry // backs entries: a first attempt allocates nothing extra
	scratch   []byte                 // for keys that must be re-quoted during a comparison
	keyBuilds int                    // variant comparisons made; lets tests check that the direct path makes none
}

// cacheEntry is one built body. input holds a real pointer (not a uintptr) so that the input's
// memory stays alive, and its address cannot be reused by another allocation, while the entry
// exists.
type cacheEntry struct {
	input    *byte // unsafe.SliceData of the input value
	inputLen int
	body     []byte
	handle   any // Alloc's handle of the buffer body is in (nil: none)
}

// Stats counts how Body produced its results. Misses are full serializations of cacheable
// bodies; Direct are serializations that bypassed the cache entirely.
type Stats struct{ Hits, Misses, Direct int }

// NewCache returns an empty cache for one request.
func NewCache() *Cache { return &Cache{} }

// NewUncached returns a disabled cache, the baseline of the benchmark: Body takes the same
// decisions, but every cacheable call builds the whole body and counts as a miss, without
// building a variant key.
func NewUncached() *Cache { return &Cache{disabled: true} }

// Stats returns the counters accumulated so far.
func (c *Cache) Stats() Stats { return c.stats }

// Body returns the upstream body for o with ov applied; it is byte for byte Build(nil, o, ov).
// The returned slice may be shared with earlier and later calls: callers must not modify it.
func (c *Cache) Body(o *Object, inputKey string, ov []Override) []byte {
	body, _ := c.BodyIn(o, inputKey, ov)
	return body
}

// BodyIn is Body, with the handle Alloc gave for the buffer the body is in (nil: a buffer
// that is not Alloc's), for a hit as for a build.
//
// inputKey names the large immutable member ("input" for Responses; "" disables caching, e.g.
// for Chat Completions). The body is built directly, without building any key, when inputKey is
// "", when o.Size < DirectBelow, or when the member (after overrides) is absent or not an array.
// Otherwise the body is looked up by input identity and variant key; on a miss it is built in
// full and stored.
func (c *Cache) BodyIn(o *Object, inputKey string, ov []Override) ([]byte, any) {
	if inputKey == "" || o.Size < DirectBelow {
		return c.direct(o, ov)
	}
	input, ok := effectiveValue(o, inputKey, ov)
	if !ok || KindOf(input) != KindArray {
		return c.direct(o, ov)
	}
	if c.disabled {
		c.stats.Misses++
		return c.build(o, ov)
	}
	c.keyBuilds++
	ptr, n := unsafe.SliceData(input), len(input)
	for i := range c.entries {
		e := &c.entries[i]
		if e.input == ptr && e.inputLen == n && c.sameVariant(e.body, o, ov, inputKey) {
			c.stats.Hits++
			return e.body, e.handle
		}
	}
	c.stats.Misses++
	body, handle := c.build(o, ov)
	if len(c.entries) == maxEntries { // drop the oldest
		copy(c.entries, c.entries[1:])
		c.entries[maxEntries-1] = cacheEntry{}
		c.entries = c.entries[:maxEntries-1]
	}
	if c.entries == nil {
		c.entries = c.store[:0]
	}
	c.entries = append(c.entries, cacheEntry{input: ptr, inputLen: n, body: body, handle: handle})
	return body, handle
}

// sameVariant reports whether Build(nil, o, ov) would produce body everywhere outside the
// value of inputKey, i.e. whether the two variant keys are equal, without building either.
// The caller has checked that the input values have the same identity (and so length).
func (c *Cache) sameVariant(body []byte, o *Object, ov []Override, inputKey string) bool {
	pos := 0
	expect := func(b []byte) bool {
		if len(body)-pos < len(b) || !bytes.Equal(body[pos:pos+len(b)], b) {
			return false
		}
		pos += len(b)
		return true
	}
	if !expect(openBrace) {
		return false
	}
	it := outputMembers{o: o, ov: ov}
	for rawKey, key, v, ok := it.next(); ok; rawKey, key, v, ok = it.next() {
		if it.emitted > 1 && !expect(comma) {
			return false
		}
		if rawKey == nil {
			c.scratch = AppendString(c.scratch[:0], key)
			rawKey = c.scratch
		}
		if !expect(rawKey) || !expect(colon) {
			return false
		}
		if key == inputKey {
			if len(body)-pos < len(v) {
				return false
			}
			pos += len(v) // the input itself: same identity, not compared
			continue
		}
		if !expect(v) {
			return false
		}
	}
	return expect(closeBrace) && pos == len(body)
}

var (
	openBrace  = []byte{'{'}
	closeBrace = []byte{'}'}
	comma      = []byte{','}
	colon      = []byte{':'}
)

// direct builds the body without touching the cache.
func (c *Cache) direct(o *Object, ov []Override) ([]byte, any) {
	c.stats.Direct++
	return c.build(o, ov)
}

// build builds the body into a buffer from Alloc large enough for o with ov (none: a new
// one), and returns the buffer's handle unless the body outgrew it.
func (c *Cache) build(o *Object, ov []Override) ([]byte, any) {
	if c.Alloc == nil {
		return Build(nil, o, ov), nil
	}
	n := o.Size + 2
	for _, v := range ov {
		n += len(v.Key) + len(v.Value) + 8
	}
	buf, handle := c.Alloc(n)
	body := Build(buf[:0], o, ov)
	if unsafe.SliceData(body) != unsafe.SliceData(buf) {
		return body, nil // it did not fit: a new allocation
	}
	return body, handle
}
