package payload

import (
	"bytes"
	"unicode/utf8"
)

// Override replaces the value of Key (Value != nil) or removes the member (Value == nil).
// A key not present in the object is appended at the end, in the order given.
//
// Value must be a valid raw JSON value (e.g. []byte("false"), AppendString(nil, model)):
// Build copies it verbatim. If several overrides name the same key, the last one wins (an
// appended key then takes the position of that last override).
type Override struct {
	Key   string
	Value []byte
}

// Build appends the object with overrides applied: '{' then the members in arrival order using
// their RawKey and Value bytes as received, joined by ',' with no added whitespace, then '}'.
// Members appended by overrides get their key quoted with AppendString.
//
// The exact output length is computed first, so dst grows at most once.
func Build(dst []byte, o *Object, ov []Override) []byte {
	// First pass: the exact length.
	size, count := 2, 0
	it := outputMembers{o: o, ov: ov}
	for rawKey, key, v, ok := it.next(); ok; rawKey, key, v, ok = it.next() {
		if rawKey == nil {
			size += quotedLen(key)
		} else {
			size += len(rawKey)
		}
		size += len(v)
		size++ // ':'
		count++
	}
	if count > 1 {
		size += count - 1 // ','
	}
	// Second pass: the bytes.
	if cap(dst)-len(dst) < size {
		grown := make([]byte, len(dst), len(dst)+size)
		copy(grown, dst)
		dst = grown
	}
	dst = append(dst, '{')
	it = outputMembers{o: o, ov: ov}
	for rawKey, key, v, ok := it.next(); ok; rawKey, key, v, ok = it.next() {
		if it.emitted > 1 {
			dst = append(dst, ',')
		}
		if rawKey == nil {
			dst = AppendString(dst, key)
		} else {
			dst = append(dst, rawKey...)
		}
		dst = append(dst, ':')
		dst = append(dst, v...)
	}
	return append(dst, '}')
}

// outputMembers iterates over the members of the output object, in output order, with their
// values after overrides: first the object's members (replaced or removed by overrides), then
// the overrides naming keys absent from the object.
type outputMembers struct {
	o       *Object
	ov      []Override
	i, j    int // next member, next override
	emitted int // members returned so far
}

// next returns the next member. rawKey is nil for a member appended by an override, whose key
// must be quoted.
func (it *outputMembers) next() (rawKey []byte, key string, v []byte, ok bool) {
	for it.i < len(it.o.Members) {
		m := &it.o.Members[it.i]
		it.i++
		v := m.Value
		if j := lastOverride(it.ov, m.Key, 0); j >= 0 {
			if v = it.ov[j].Value; v == nil {
				continue // removed
			}
		}
		it.emitted++
		return m.RawKey, m.Key, v, true
	}
	for it.j < len(it.ov) {
		o := &it.ov[it.j]
		it.j++
		if o.Value == nil || lastOverride(it.ov, o.Key, it.j) >= 0 {
			continue // removal, or superseded by a later override of the same key
		}
		if _, present := it.o.Get(o.Key); !present {
			it.emitted++
			return nil, o.Key, o.Value, true
		}
	}
	return nil, "", nil, false
}

// lastOverride returns the index of the last override of key in ov[from:], or -1.
func lastOverride(ov []Override, key string, from int) int {
	for j := len(ov) - 1; j >= from; j-- {
		if ov[j].Key == key {
			return j
		}
	}
	return -1
}

// effectiveValue returns the value of key once overrides are applied.
func effectiveValue(o *Object, key string, ov []Override) ([]byte, bool) {
	if j := lastOverride(ov, key, 0); j >= 0 {
		return ov[j].Value, ov[j].Value != nil
	}
	return o.Get(key)
}

// safe[c] is true for ASCII bytes that AppendString copies without escaping.
var safe = plain

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string, escaping exactly like encoding/json with HTML
// escaping disabled: '"' and '\\' are backslashed, control characters use \b \f \n \r \t or
// \u00XX, invalid UTF-8 bytes become \ufffd, and U+2028/U+2029 are escaped.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if safe[c] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '\\', '"':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// quotedLen returns len(AppendString(nil, s)) without building it.
func quotedLen(s string) int {
	n := 2
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case safe[c]:
				n++
			case c == '\\' || c == '"' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t':
				n += 2
			default:
				n += 6
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || r == '\u2028' || r == '\u2029' {
			n += 6
		} else {
			n += size
		}
		i += size
	}
	return n
}

// Unchanged returns the body o was parsed from when Build(nil, o, ov) would give it back byte
// for byte: the body is compact (no whitespace between its tokens at the top level) and every
// override leaves its member as it is. Such a body can be sent as it arrived, without a copy.
func Unchanged(o *Object, ov []Override) ([]byte, bool) {
	if o.raw == nil {
		return nil, false
	}
	for _, v := range ov {
		now, ok := effectiveValue(o, v.Key, ov)
		was, had := o.Get(v.Key)
		if ok != had || !bytes.Equal(now, was) {
			return nil, false
		}
	}
	return o.raw, true
}
