package pool

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
)

// upstreamError is the error object of an upstream answer or event, in its several shapes:
// {"error":{...}}, {"response":{"error":{...}}} and a bare {"code","message"}.
//
// Every member is read leniently (looseString, looseNumber): an upstream that writes one member
// in an unexpected type ("retry_after": "30", "message": {...}) must not hide the others, the
// code above all, which says how long the account rests.
type upstreamError struct {
	Code    any         `json:"code"`
	Type    looseString `json:"type"`
	Message looseString `json:"message"`
	// Numbers as floats: a value too large for an int64 still reads (and rests for the cap).
	ResetsAt        looseNumber `json:"resets_at"`
	ResetsInSeconds looseNumber `json:"resets_in_seconds"`
	// A Retry-After carried in the body (a stream's failure event has no headers): seconds.
	RetryAfter        looseNumber `json:"retry_after"`
	RetryAfterSeconds looseNumber `json:"retry_after_seconds"`
}

// looseNumber is a JSON number, or a string holding one ("30"); any other value reads as 0,
// without failing the object it is in.
type looseNumber float64

func (n *looseNumber) UnmarshalJSON(b []byte) error {
	s := string(b)
	if len(b) > 0 && b[0] == '"' {
		if json.Unmarshal(b, &s) != nil {
			return nil
		}
		s = strings.TrimSpace(s)
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
		*n = looseNumber(f)
	}
	return nil
}

// looseString is a JSON string; a number or boolean reads as its text, any other value as "",
// without failing the object it is in.
type looseString string

func (s *looseString) UnmarshalJSON(b []byte) error {
	var v any
	if json.Unmarshal(b, &v) != nil {
		return nil
	}
	switch v := v.(type) {
	case string:
		*s = looseString(v)
	case float64:
		*s = looseString(strconv.FormatFloat(v, 'f', -1, 64))
	case bool:
		*s = looseString(strconv.FormatBool(v))
	}
	return nil
}

// millisecondsAfter is the first resets_at that can only be milliseconds: as seconds it would be
// past the year 5000, as milliseconds it is 1973.
const millisecondsAfter = 1e11

func (e *upstreamError) code() string {
	switch c := e.Code.(type) {
	case string:
		if c != "" {
			return c
		}
	case float64:
		return strconv.FormatFloat(c, 'f', -1, 64)
	}
	if e.Type == "usage_limit_reached" || e.Type == "insufficient_quota" {
		return string(e.Type)
	}
	return ""
}

// ErrorBody is what an upstream's error object says: its code and message, and when its limit
// resets: at a time (resetsAt, unix seconds) or after a while (resetIn, seconds).
type ErrorBody struct {
	Code, Msg string
	ResetsAt  int64
	ResetIn   float64
}

// ParseErrorBody reads an upstream's error object, in its several shapes.
func ParseErrorBody(body []byte) ErrorBody {
	var v struct {
		Error    json.RawMessage `json:"error"`
		Response json.RawMessage `json:"response"`
		upstreamError
	}
	if json.Unmarshal(body, &v) != nil {
		return ErrorBody{Msg: strings.TrimSpace(string(body[:min(len(body), 200)]))}
	}
	e := &v.upstreamError
	if len(v.Error) > 0 {
		var inner upstreamError
		if json.Unmarshal(v.Error, &inner) == nil {
			e = &inner
		} else {
			var s looseString
			s.UnmarshalJSON(v.Error)
			e.Message = s
		}
	} else if len(v.Response) > 0 {
		var r struct {
			Error *upstreamError `json:"error"`
		}
		if json.Unmarshal(v.Response, &r) == nil && r.Error != nil {
			e = r.Error
		}
	}
	out := ErrorBody{Code: e.code(), Msg: string(e.Message)}
	if at := float64(e.ResetsAt); at > 0 {
		if at >= millisecondsAfter {
			at /= 1000
		}
		out.ResetsAt = int64(min(at, 1<<53)) // far enough: RestEnd caps it
	}
	if e.ResetsInSeconds > 0 {
		out.ResetIn = float64(e.ResetsInSeconds)
	} else if ra := max(e.RetryAfter, e.RetryAfterSeconds); ra > 0 {
		out.ResetIn = float64(ra)
	}
	return out
}
