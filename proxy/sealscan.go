package proxy

import (
	"bytes"
	"strings"

	"github.com/codexrelay/codexrelay/proxy/payload"
)

// The scans of sealed parts: functions that find, in the raw JSON bytes of an item, an event
// or a call's arguments, the sealed values it carries and the ids and types that go with them,
// parsing only where a scan says there may be something (what the relay does with them:
// sealed.go).

var (
	encryptedKey  = []byte(`"encrypted_content"`)
	sealedArgsKey = []byte(`"encrypted_function_args"`)
	// sealedPrefix starts every sealed value the backends issue (Fernet tokens): a call's
	// arguments replayed without their encrypted_function_args list are known sealed by it.
	sealedPrefix = []byte(`gAAAA`)
)

// mayBeSealed reports whether an item may hold sealed parts: a scan of its bytes.
func mayBeSealed(item []byte) bool {
	return bytes.Contains(item, encryptedKey) || bytes.Contains(item, sealedPrefix)
}

// sealedTokens calls f with every sealed token (as a raw JSON string) quoted inside a JSON
// string of b: a call's arguments are a JSON string, and a sealed value in them reads
// \"gAAAA...\" (its characters, base64url, need no escape).
func sealedTokens(b []byte, f func(v []byte)) {
	open := append([]byte(`\"`), sealedPrefix...)
	for rest := b; ; {
		i := bytes.Index(rest, open)
		if i < 0 {
			return
		}
		rest = rest[i+2:]
		n := 0
		for n < len(rest) && isTokenByte(rest[n]) {
			n++
		}
		if n < len(rest) && rest[n] == '\\' {
			f(payload.AppendString(nil, string(rest[:n])))
		}
		rest = rest[n:]
	}
}

func isTokenByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '='
}

// sealedIn calls f with every sealed value of an input item, as raw JSON strings: every
// non-empty encrypted_content string at any depth (one scan of the bytes: a member name
// cannot occur unescaped inside a JSON string), and a function call's sealed arguments.
func sealedIn(item []byte, f func(v []byte)) {
	sealedContents(item, f)
	if bytes.Contains(item, sealedPrefix) && bytes.Contains(item, functionCallType) {
		if o, err := payload.Parse(item); err == nil {
			for _, v := range sealedArgs(o) {
				f(v)
			}
		}
	}
}

// sealedContents calls f with every non-empty encrypted_content string in b, at any depth.
func sealedContents(b []byte, f func(v []byte)) {
	for rest := b; ; {
		i := bytes.Index(rest, encryptedKey)
		if i < 0 {
			return
		}
		rest = rest[i+len(encryptedKey):]
		v, n := stringValue(rest)
		if n == 0 {
			continue
		}
		rest = rest[n:]
		if len(v) > 2 {
			f(v)
		}
	}
}

// sealedArgs are the sealed values (raw JSON strings) in the arguments of a function call o:
// the members its encrypted_function_args list names or, without the list (Codex replays a
// call without it), every string member that reads as a sealed token.
func sealedArgs(o *payload.Object) [][]byte {
	if t, _ := stringMember(o, "type"); t != "function_call" {
		return nil
	}
	args, ok := stringMember(o, "arguments")
	if !ok || !strings.Contains(args, string(sealedPrefix)) {
		return nil
	}
	// The list, as raw JSON: ["message"]; a name is in it when its quoted form is.
	names, listed := o.Get("encrypted_function_args")
	listed = listed && payload.KindOf(names) == payload.KindArray && len(names) > 2
	ao, err := payload.Parse([]byte(args))
	if err != nil {
		return nil
	}
	var out [][]byte
	for _, mem := range ao.Members {
		v := mem.Value
		if payload.KindOf(v) != payload.KindString || len(v) <= 2 {
			continue
		}
		if listed && bytes.Contains(names, payload.AppendString(nil, mem.Key)) || !listed && bytes.HasPrefix(v[1:], sealedPrefix) {
			out = append(out, v)
		}
	}
	return out
}

// stringValue reads `: "..."` at the start of b (after a key) and returns the string with its
// quotes, as raw JSON, and how many bytes of b it took; n is 0 when b holds no string there.
func stringValue(b []byte) (v []byte, n int) {
	i := 0
	skip := func() {
		for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
			i++
		}
	}
	skip()
	if i >= len(b) || b[i] != ':' {
		return nil, 0
	}
	i++
	skip()
	if i >= len(b) || b[i] != '"' {
		return nil, 0
	}
	start := i
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return b[start : i+1], i + 1
		}
	}
	return nil, 0
}

// callOutput is, for an item that is a tool call's output, its type and call_id.
func callOutput(item []byte) (kind, call string) {
	if !bytes.Contains(item, []byte(`_output"`)) {
		return "", ""
	}
	o, err := payload.Parse(item)
	if err != nil {
		return "", ""
	}
	kind, _ = stringMember(o, "type")
	if !strings.HasSuffix(kind, "_call_output") {
		return "", ""
	}
	call, _ = stringMember(o, "call_id")
	return kind, call
}
