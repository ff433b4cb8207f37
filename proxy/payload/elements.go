package payload

import "errors"

// Elements splits a JSON array into its elements' raw bytes, subslices of raw (no copy),
// without their surrounding whitespace. raw must be a value Parse or Parser accepted (an
// Object's member): it is not validated again, only walked, at about the cost of a string scan.
// The WebSocket transport uses it to keep a conversation's items one by one.
func Elements(raw []byte) ([][]byte, error) {
	return elements(raw, false)
}

// First is the first element of a JSON array, as Elements would split it, walking no further
// than its end; false when the array is empty or raw is not one.
func First(raw []byte) ([]byte, bool) {
	els, err := elements(raw, true)
	if err != nil || len(els) == 0 {
		return nil, false
	}
	return els[0], true
}

// elements splits raw, or with first only its first element.
func elements(raw []byte, first bool) ([][]byte, error) {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '[' {
		return nil, errors.New("payload: not an array")
	}
	var out [][]byte
	depth, start := 0, -1
	for i++; i < len(raw); i++ {
		switch c := raw[i]; c {
		case ' ', '\t', '\n', '\r':
			continue
		case '"':
			if depth == 0 && start < 0 {
				start = i
			}
			end, _, err := scanString(raw, i)
			if err != nil {
				return nil, err
			}
			i = end - 1
		case '{', '[':
			if depth == 0 && start < 0 {
				start = i
			}
			depth++
		case '}', ']':
			if depth > 0 {
				depth--
				continue
			}
			if start >= 0 {
				out = append(out, trimRight(raw[start:i]))
			}
			return out, nil
		case ',':
			if depth == 0 {
				out = append(out, trimRight(raw[start:i]))
				if first {
					return out, nil
				}
				start = -1
			}
		default:
			if depth == 0 && start < 0 {
				start = i
			}
		}
	}
	return nil, errors.New("payload: unterminated array")
}

func trimRight(b []byte) []byte {
	for len(b) > 0 {
		switch b[len(b)-1] {
		case ' ', '\t', '\n', '\r':
			b = b[:len(b)-1]
			continue
		}
		break
	}
	return b
}
