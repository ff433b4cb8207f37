// Package payload parses request bodies once, keeping every top-level member as raw bytes,
// rebuilds upstream bodies from those bytes plus a few overrides, and caches the rebuilt
// body for the account rotations of a single request.
//
// The large "input" array of a Responses request (often over a megabyte) is validated once and
// then only ever copied: it is never decoded into Go values nor re-encoded.
package payload

import (
	"encoding/binary"
	"math/bits"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// MaxDepth is the deepest nesting of objects and arrays Parse accepts. The top-level object
// counts as depth 1, so a body may contain MaxDepth nested containers in total.
const MaxDepth = 512

// Object is a parsed top-level JSON object; member values are raw subslices of the body.
// The body must not be modified while the Object (or anything built from it) is in use.
type Object struct {
	Members []Member // in arrival order
	Size    int      // len of the body parsed
	// raw is the body itself when it is compact (Build without overrides reproduces it), else nil.
	raw []byte
}

// Member is one top-level member of an Object.
type Member struct {
	Key    string // decoded key
	RawKey []byte // the key exactly as received, with quotes (subslice of body)
	Value  []byte // the value exactly as received, no surrounding whitespace (subslice of body)
}

// Get returns the raw value of the member named key.
func (o *Object) Get(key string) (value []byte, ok bool) {
	for i := range o.Members {
		if o.Members[i].Key == key {
			return o.Members[i].Value, true
		}
	}
	return nil, false
}

// Error describes why a body was rejected. Its message is short and never quotes more than a
// few bytes of the body, because it is returned to clients and written to logs.
type Error struct {
	Offset int    // byte offset in the body where the problem was detected
	Msg    string // short human sentence
}

func (e *Error) Error() string {
	return "invalid JSON at byte " + strconv.Itoa(e.Offset) + ": " + e.Msg
}

// Parse validates body strictly as one JSON object and splits its top-level members.
//
// Validation follows RFC 8259 and accepts exactly what json.Valid accepts, with three
// additions that make a body unusable for the relay: strings must be valid UTF-8 (no invalid bytes
// inside strings), the top level must be an object without duplicate keys (compared after
// decoding, as encoding/json would map them), and nesting may not exceed MaxDepth.
// Escaped lone surrogates such as "\ud800" are accepted, like encoding/json does; decoding
// turns them into U+FFFD.
//
// Parse allocates only the Object, its Members slice and the decoded keys: values stay subslices
// of body, and validating a value never allocates, whatever its size or depth.
func Parse(body []byte) (*Object, error) {
	var p Parser
	return p.Finish(body)
}

// Parser validates a body while it arrives, so that the validation of a large request overlaps
// its transfer instead of following it. Feed it the body received so far as it grows, then call
// Finish with the whole body: the result is exactly Parse's.
//
// The scan stops at the end of the data fed and resumes from the last comma it passed (a point
// where the state is a depth and whether a key or a value comes next), so a token split between
// two reads is scanned again, never misread. Feed only scans once the data has grown by as much
// as the last scan had to rescan, so a body costs at most about two scans in all, however small
// its reads. The body may move as it grows (as append moves it): the members found so far
// follow it.
//
// A Parser is not safe for concurrent use. The zero value is ready.
type Parser struct {
	// The checkpoint: b[:pos] is validated; the scan resumes at pos in mode, inside depth open
	// containers whose kinds are isObject[1:depth+1], with nmembers top-level members complete.
	pos, depth, nmembers int
	mode                 uint8
	scanned              int   // len(b) at the last scan
	err                  error // a definitive error, sticky
	base                 *byte // the body's first byte: members are subslices of it
	members              []Member
	seen                 map[string]struct{} // duplicate detection for objects with many members
	cur                  struct {            // the top-level member being scanned
		key        string
		ks, ke, vs int
	}
	isObject [MaxDepth + 1]bool
}

// Scan modes: what comes next at the checkpoint.
const (
	modeStart uint8 = iota // the top-level object's '{'
	modeKey                // an object key
	modeValue              // a value
	modeEnd                // nothing but whitespace
)

// minFeed is the least growth for which Feed scans again.
const minFeed = 16 << 10

// Feed validates as much of b, the body received so far, as it can. b must extend what earlier
// calls were given (it may have moved). Feed returns a definitive error, the same as Finish
// will, as soon as one is found; a body that only stops short is not an error.
func (p *Parser) Feed(b []byte) error {
	if p.err != nil {
		return p.err
	}
	if grown := len(b) - p.scanned; grown < minFeed || grown < p.scanned-p.pos {
		return nil
	}
	return p.scan(b)
}

// scan validates as much of b as it can, now.
func (p *Parser) scan(b []byte) error {
	p.follow(b)
	if p.err != nil {
		return p.err
	}
	p.scanned = len(b)
	return p.run(b, false)
}

// Finish validates the rest of body, the whole of it, and returns its top-level object.
func (p *Parser) Finish(body []byte) (*Object, error) {
	p.follow(body)
	if p.err == nil {
		p.scanned = len(body)
		p.run(body, true)
	}
	if p.err != nil {
		return nil, p.err
	}
	o := &Object{Size: len(body), Members: p.members}
	if o.Members == nil {
		o.Members = []Member{}
	}
	p.members = nil
	// The body is compact when Build without overrides gives it back byte for byte: '{', the
	// members joined by ',' with ':' after each key, '}', and no whitespace anywhere.
	next := 1 // where the next key starts in a compact body; -1 once it is not compact
	for _, m := range o.Members {
		ks, vs := offset(body, m.RawKey), offset(body, m.Value)
		if ks != next || vs != ks+len(m.RawKey)+1 {
			next = -1
			break
		}
		next = vs + len(m.Value) + 1 // past the ',' or the closing '}'
	}
	if next > 0 && body[0] == '{' && len(body) == max(next, 2) {
		o.raw = body[:len(body):len(body)]
	}
	return o, nil
}

// offset returns where sub, a subslice of b, starts in b.
func offset(b, sub []byte) int { return offsetFrom(unsafe.SliceData(b), sub) }

// follow moves the members found so far to b when the body moved since the last scan (the
// rest of the state is offsets). Only the old addresses are used, never the old bytes.
func (p *Parser) follow(b []byte) {
	base := unsafe.SliceData(b)
	if base == p.base {
		return
	}
	for i := range p.members {
		m := &p.members[i]
		ks, vs := offsetFrom(p.base, m.RawKey), offsetFrom(p.base, m.Value)
		m.RawKey = b[ks : ks+len(m.RawKey) : ks+len(m.RawKey)]
		m.Value = b[vs : vs+len(m.Value) : vs+len(m.Value)]
	}
	p.base = base
}

// offsetFrom returns where sub starts in the buffer whose first byte is at base.
func offsetFrom(base *byte, sub []byte) int {
	return int(uintptr(unsafe.Pointer(unsafe.SliceData(sub))) - uintptr(unsafe.Pointer(base)))
}

// run scans b from the checkpoint. At the end of b it returns errEOF when final, and otherwise
// goes back to the checkpoint to wait for more.
func (p *Parser) run(b []byte, final bool) error {
	n := len(b)
	i, depth, mode := p.pos, p.depth, p.mode
	var err error
	for {
		switch mode {
		case modeStart:
			if i = skipSpace(b, i); i >= n {
				return p.more(final, n)
			}
			if b[i] != '{' {
				if k := KindOf(b[i:]); k != KindInvalid {
					return p.fail(&Error{i, "top-level value must be an object, not " + k.article()})
				}
				return p.fail(errChar(b, i, "looking for beginning of value"))
			}
			depth = 1
			p.isObject[1] = true
			if i = skipSpace(b, i+1); i >= n {
				return p.more(final, n)
			}
			if b[i] == '}' {
				i, depth, mode = i+1, 0, modeEnd
				continue
			}
			mode = modeKey

		case modeKey:
			if i = skipSpace(b, i); i >= n {
				return p.more(final, n)
			}
			if b[i] != '"' {
				return p.fail(errChar(b, i, "looking for beginning of object key string"))
			}
			ks := i
			var escaped bool
			if i, escaped, err = scanString(b, i); err != nil {
				return p.failOrMore(err, final, n)
			}
			if depth == 1 {
				if err := p.topKey(b, ks, i, escaped); err != nil {
					return p.fail(err)
				}
			}
			if i = skipSpace(b, i); i >= n {
				return p.more(final, n)
			}
			if b[i] != ':' {
				return p.fail(errChar(b, i, "after object key"))
			}
			i++
			mode = modeValue

		case modeValue:
			if i = skipSpace(b, i); i >= n {
				return p.more(final, n)
			}
			if depth == 1 {
				p.cur.vs = i
			}
			switch c := b[i]; c {
			case '"':
				i, _, err = scanString(b, i)
			case '{', '[':
				if depth == MaxDepth {
					return p.fail(&Error{i, "exceeded maximum nesting depth " + strconv.Itoa(MaxDepth)})
				}
				depth++
				p.isObject[depth] = c == '{'
				if i = skipSpace(b, i+1); i >= n {
					return p.more(final, n)
				}
				if c == '[' && b[i] != ']' {
					continue // mode stays modeValue
				}
				if c == '{' && b[i] != '}' {
					mode = modeKey
					continue
				}
				i++ // an empty container: a value that ended
				depth--
			case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
				i, err = scanNumber(b, i)
			case 't':
				i, err = scanLiteral(b, i, "true")
			case 'f':
				i, err = scanLiteral(b, i, "false")
			case 'n':
				i, err = scanLiteral(b, i, "null")
			default:
				return p.fail(errChar(b, i, "looking for beginning of value"))
			}
			if err != nil {
				return p.failOrMore(err, final, n)
			}
			// A value ended at i: close finished containers until a comma or the end.
			for {
				if depth == 1 {
					p.record(b, i)
				}
				if i = skipSpace(b, i); i >= n {
					return p.more(final, n)
				}
				c := b[i]
				if c == ',' {
					i++
					if p.isObject[depth] {
						mode = modeKey
					}
					if !final { // a checkpoint: nothing before i can change any more
						p.pos, p.depth, p.mode, p.nmembers = i, depth, mode, len(p.members)
					}
					break
				}
				if p.isObject[depth] {
					if c != '}' {
						return p.fail(errChar(b, i, "after object key:value pair"))
					}
				} else if c != ']' {
					return p.fail(errChar(b, i, "after array element"))
				}
				i++
				if depth--; depth == 0 {
					mode = modeEnd
					break
				}
			}

		case modeEnd:
			if i = skipSpace(b, i); i < n {
				return p.fail(errChar(b, i, "after top-level value"))
			}
			p.pos, p.depth, p.mode, p.nmembers = i, 0, modeEnd, len(p.members)
			return nil
		}
	}
}

// topKey checks and records the key b[ks:ke] of a top-level member.
func (p *Parser) topKey(b []byte, ks, ke int, escaped bool) error {
	var key string
	if escaped {
		key = string(appendUnescaped(make([]byte, 0, ke-ks), b[ks+1:ke-1]))
	} else {
		key = string(b[ks+1 : ke-1])
	}
	if p.isDup(key) {
		return &Error{ks, "duplicate key " + shortQuote(key)}
	}
	p.cur.key, p.cur.ks, p.cur.ke = key, ks, ke
	return nil
}

// more handles the end of the data: an error for the final data, else a return to the
// checkpoint to wait for more.
func (p *Parser) more(final bool, n int) error {
	if final {
		return p.fail(errEOF(n))
	}
	if len(p.members) > p.nmembers {
		if p.seen != nil {
			for _, m := range p.members[p.nmembers:] {
				delete(p.seen, m.Key)
			}
		}
		p.members = p.members[:p.nmembers]
	}
	return nil
}

// failOrMore treats a token cut by the end of the data like more, and fails on anything else.
func (p *Parser) failOrMore(err error, final bool, n int) error {
	if e, ok := err.(*Error); ok && e.Offset == n && e.Msg == msgEOF {
		return p.more(final, n)
	}
	return p.fail(err)
}

func (p *Parser) fail(err error) error {
	p.err = err
	return err
}

// dupMapAbove is the member count from which duplicate detection switches from a linear scan
// to a map, so that a body with a huge number of top-level keys cannot cost quadratic time.
const dupMapAbove = 16

// isDup reports whether key is already the key of a complete member. Members are compared by
// decoded key.
func (p *Parser) isDup(key string) bool {
	if p.seen == nil {
		if len(p.members) < dupMapAbove {
			for i := range p.members {
				if p.members[i].Key == key {
					return true
				}
			}
			return false
		}
		p.seen = make(map[string]struct{}, 2*len(p.members))
		for i := range p.members {
			p.seen[p.members[i].Key] = struct{}{}
		}
	}
	_, ok := p.seen[key]
	return ok
}

// record adds the current member, whose value ends at ve; seen, when built, always holds exactly
// the members' keys.
func (p *Parser) record(b []byte, ve int) {
	if p.members == nil {
		p.members = make([]Member, 0, 16)
	}
	c := &p.cur
	p.members = append(p.members, Member{Key: c.key, RawKey: b[c.ks:c.ke:c.ke], Value: b[c.vs:ve:ve]})
	if p.seen != nil {
		p.seen[c.key] = struct{}{}
	}
}

// skipSpace returns the index of the first non-whitespace byte at or after i.
func skipSpace(b []byte, i int) int {
	for ; i < len(b); i++ {
		if c := b[i]; c > ' ' || (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
			return i
		}
	}
	return i
}

// SWAR constants: one bit or value repeated in every byte of a uint64.
const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// plain[c] is true for bytes that need no attention inside a string: printable ASCII other than
// '"' and '\\'.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// scanString validates the string starting at b[i] == '"' and returns the index just past the
// closing quote and whether the string contains escapes.
//
// Plain ASCII is skipped eight bytes at a time: for each byte x of a word, the high bit of
// (x-0x20) | ((x^'"')-1) | ((x^'\\')-1) | x is set when x < 0x20, x == '"', x == '\\' or
// x >= 0x80. Borrows only start at such a byte and only propagate to later bytes, so the lowest
// flagged byte is exactly the first byte that needs attention.
func scanString(b []byte, i int) (end int, escaped bool, err error) {
	n := len(b)
	i++ // opening quote
	for {
		if i+8 <= n {
			x := binary.LittleEndian.Uint64(b[i:])
			t := ((x - lsb*0x20) | ((x ^ lsb*'"') - lsb) | ((x ^ lsb*'\\') - lsb) | x) & msb
			if t == 0 {
				i += 8
				continue
			}
			i += bits.TrailingZeros64(t) >> 3
		} else { // the last few bytes of the body
			for i < n && plain[b[i]] {
				i++
			}
			if i >= n {
				return 0, false, errEOF(n)
			}
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1, escaped, nil
		case c == '\\':
			escaped = true
			if i+1 >= n {
				return 0, false, errEOF(n)
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				i += 2
				for end := i + 4; i < end; i++ {
					if i >= n {
						return 0, false, errEOF(n)
					}
					if hexVal(b[i]) < 0 {
						return 0, false, errChar(b, i, `in \u hexadecimal character escape`)
					}
				}
			default:
				return 0, false, errChar(b, i+1, "in string escape")
			}
		case c < 0x20:
			return 0, false, errChar(b, i, "in string literal")
		default: // c >= 0x80: validate one UTF-8 sequence
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size == 1 {
				if !utf8.FullRune(b[i:]) {
					return 0, false, errEOF(n)
				}
				return 0, false, &Error{i, "invalid UTF-8 byte 0x" + strconv.FormatUint(uint64(c), 16) + " in string"}
			}
			i += size
		}
	}
}

// hexVal returns the value of a hexadecimal digit, or -1.
func hexVal(c byte) rune {
	switch {
	case '0' <= c && c <= '9':
		return rune(c - '0')
	case 'a' <= c && c <= 'f':
		return rune(c - 'a' + 10)
	case 'A' <= c && c <= 'F':
		return rune(c - 'A' + 10)
	}
	return -1
}

// scanNumber validates the number starting at b[i] ('-' or a digit) and returns the index just
// past it: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func scanNumber(b []byte, i int) (int, error) {
	n := len(b)
	if b[i] == '-' {
		i++
	}
	switch {
	case i >= n:
		return 0, errEOF(n)
	case b[i] == '0':
		i++
	case '1' <= b[i] && b[i] <= '9':
		i = skipDigits(b, i+1)
	default:
		return 0, errChar(b, i, "in numeric literal")
	}
	if i < n && b[i] == '.' {
		if i++; i >= n {
			return 0, errEOF(n)
		}
		if !isDigit(b[i]) {
			return 0, errChar(b, i, "after decimal point in numeric literal")
		}
		i = skipDigits(b, i+1)
	}
	if i < n && (b[i] == 'e' || b[i] == 'E') {
		if i++; i < n && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= n {
			return 0, errEOF(n)
		}
		if !isDigit(b[i]) {
			return 0, errChar(b, i, "in exponent of numeric literal")
		}
		i = skipDigits(b, i+1)
	}
	return i, nil
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func skipDigits(b []byte, i int) int {
	for i < len(b) && isDigit(b[i]) {
		i++
	}
	return i
}

// scanLiteral validates the literal lit (true, false or null) at b[i] and returns the index just
// past it.
func scanLiteral(b []byte, i int, lit string) (int, error) {
	for k := 1; k < len(lit); k++ {
		if i+k >= len(b) {
			return 0, errEOF(len(b))
		}
		if b[i+k] != lit[k] {
			return 0, errChar(b, i+k, "in literal "+lit+" (expecting "+quoteChar(lit[k])+")")
		}
	}
	return i + len(lit), nil
}

// DecodeString unquotes a raw JSON string value. It validates raw like Parse does and decodes
// escapes like encoding/json (an escaped lone surrogate becomes U+FFFD). Without a backslash the
// result is a plain copy of the bytes between the quotes.
func DecodeString(raw []byte) (string, error) {
	if len(raw) == 0 {
		return "", errEOF(0)
	}
	if raw[0] != '"' {
		return "", errChar(raw, 0, "looking for beginning of string")
	}
	end, escaped, err := scanString(raw, 0)
	if err != nil {
		return "", err
	}
	if end != len(raw) {
		return "", errChar(raw, end, "after string")
	}
	if !escaped {
		return string(raw[1 : end-1]), nil
	}
	return string(appendUnescaped(make([]byte, 0, len(raw)), raw[1:end-1])), nil
}

// appendUnescaped appends the decoded form of s, the already validated contents of a JSON
// string (without quotes). Surrogate escapes are combined into one rune when they form a valid
// pair; otherwise each becomes U+FFFD, exactly like encoding/json.
func appendUnescaped(dst, s []byte) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c != '\\' {
			j := i + 1
			for j < len(s) && s[j] != '\\' {
				j++
			}
			dst = append(dst, s[i:j]...)
			i = j
			continue
		}
		switch e := s[i+1]; e {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r := hex4(s[i+2:])
			i += 6
			if utf16.IsSurrogate(r) {
				r2 := rune(-1)
				if i+6 <= len(s) && s[i] == '\\' && s[i+1] == 'u' {
					r2 = hex4(s[i+2:])
				}
				if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
					dst = utf8.AppendRune(dst, d)
					i += 6
					continue
				}
				r = utf8.RuneError
			}
			dst = utf8.AppendRune(dst, r)
			continue
		default: // '"', '\\', '/'
			dst = append(dst, e)
		}
		i += 2
	}
	return dst
}

// hex4 decodes four validated hexadecimal digits.
func hex4(s []byte) rune {
	return hexVal(s[0])<<12 | hexVal(s[1])<<8 | hexVal(s[2])<<4 | hexVal(s[3])
}

// Kind is the JSON type of a raw value, known from its first byte.
type Kind uint8

// Kinds of raw values. KindInvalid is returned for an empty slice or a byte that cannot start a
// JSON value.
const (
	KindInvalid Kind = iota
	KindString
	KindNumber
	KindObject
	KindArray
	KindTrue
	KindFalse
	KindNull
)

// KindOf returns the kind of a raw value from its first byte; it does not validate the rest.
func KindOf(raw []byte) Kind {
	if len(raw) == 0 {
		return KindInvalid
	}
	switch raw[0] {
	case '"':
		return KindString
	case '{':
		return KindObject
	case '[':
		return KindArray
	case 't':
		return KindTrue
	case 'f':
		return KindFalse
	case 'n':
		return KindNull
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return KindNumber
	}
	return KindInvalid
}

// String returns the JSON type name as used in API error messages; true and false are both
// "boolean".
func (k Kind) String() string {
	switch k {
	case KindString:
		return "string"
	case KindNumber:
		return "number"
	case KindObject:
		return "object"
	case KindArray:
		return "array"
	case KindTrue, KindFalse:
		return "boolean"
	case KindNull:
		return "null"
	}
	return "invalid"
}

// article returns the kind name with an indefinite article, for error messages.
func (k Kind) article() string {
	switch k {
	case KindArray, KindObject:
		return "an " + k.String()
	case KindNull:
		return "null"
	}
	return "a " + k.String()
}

// errEOF reports a body that ends in the middle of a value.
func errEOF(n int) *Error { return &Error{n, msgEOF} }

const msgEOF = "unexpected end of input"

// errChar reports the unexpected byte b[i]; context says what the parser was doing.
func errChar(b []byte, i int, context string) *Error {
	return &Error{i, "invalid character " + quoteChar(b[i]) + " " + context}
}

// quoteChar formats one byte for an error message: 'x', '\n', '\x00' or '\xff'.
func quoteChar(c byte) string {
	switch {
	case c == '\'':
		return `'\''`
	case c == '"':
		return `'"'`
	case c >= utf8.RuneSelf:
		return `'\x` + strconv.FormatUint(uint64(c)>>4, 16) + strconv.FormatUint(uint64(c)&15, 16) + `'`
	}
	q := strconv.Quote(string(rune(c)))
	return "'" + q[1:len(q)-1] + "'"
}

// shortQuote quotes s for an error message, keeping at most 20 bytes of it.
func shortQuote(s string) string {
	const max = 20
	if len(s) <= max {
		return strconv.Quote(s)
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "…"
}
