package sse

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"strings"
	"testing"
	"testing/iotest"
)

// ev is a copy of an Event that outlives the next call to Next and compares with ==.
type ev struct {
	Raw, Name, Data, ID string
	HasData             bool // Data was non-nil
}

func (e ev) String() string {
	d := "<nil>"
	if e.HasData {
		d = fmt.Sprintf("%q", e.Data)
	}
	return fmt.Sprintf("{Raw:%q Name:%q Data:%s ID:%q}", e.Raw, e.Name, d, e.ID)
}

func copyEvent(e Event) ev {
	return ev{Raw: string(e.Raw), Name: e.Name, Data: string(e.Data), ID: e.ID, HasData: e.Data != nil}
}

// readAll reads events until the first error and returns them with that error (the event
// returned with a non-EOF error, if any, is the last one in the list).
func readAll(t testing.TB, src io.Reader, max int) ([]ev, error) {
	t.Helper()
	r := NewReader(src, max)
	var evs []ev
	for i := 0; ; i++ {
		if i > 1e6 {
			t.Fatal("Next does not stop")
		}
		e, err := r.Next()
		if len(e.Data) > len(e.Raw) {
			t.Fatalf("Data %q larger than Raw %q", e.Data, e.Raw)
		}
		if err == nil && len(e.Raw) == 0 {
			t.Fatal("Next returned an empty event without error")
		}
		if err != nil && len(e.Raw) == 0 {
			return evs, err
		}
		evs = append(evs, copyEvent(e))
		if err != nil {
			// After an error, the reader keeps failing.
			if _, err2 := r.Next(); err2 == nil {
				t.Fatalf("Next after %v returned no error", err)
			}
			return evs, err
		}
	}
}

// feeders deliver the same input in different chunkings; events must not depend on them.
var feeders = []struct {
	name string
	wrap func(io.Reader) io.Reader
}{
	{"whole", func(r io.Reader) io.Reader { return r }},
	{"onebyte", iotest.OneByteReader},
	{"half", iotest.HalfReader},
	{"dataerr", iotest.DataErrReader}, // the last data comes with io.EOF
}

// d returns a pointer to data, to write an expected Data; nil means no data field.
func d(s string) *string { return &s }

type want struct {
	raw, name string
	data      *string
	id        string
}

func (w want) ev() ev {
	e := ev{Raw: w.raw, Name: w.name, ID: w.id}
	if w.data != nil {
		e.Data, e.HasData = *w.data, true
	}
	return e
}

// readerCase is a stream the reader reads whole: the events it gives and the error after them.
type readerCase struct {
	name  string
	in    string
	max   int
	want  []want
	final error // error after the events (io.EOF, ErrTruncated, ErrTooLarge)
}

// readerCases are the streams of TestReader.
func readerCases() []readerCase {
	big := strings.Repeat(`{"type":"response.output_text.delta","delta":"x"},`, 30000) // 1.5 MB
	bigEvent := "event: response.completed\ndata: " + big + "\n\n"
	bigMulti := "data: " + big + "\r\ndata: " + big[:70000] + "\r\n\r\n"
	tooLarge := "data: " + strings.Repeat("y", 100000) + "\n\n"
	return []readerCase{
		{name: "empty", in: "", final: io.EOF},
		{name: "single", in: "data: hello\n\n", want: []want{{raw: "data: hello\n\n", data: d("hello")}}, final: io.EOF},
		{
			name: "responses",
			in: "event: response.created\ndata: {\"type\":\"response.created\"}\n\n" +
				"event: response.output_text.delta\ndata: {\"delta\":\"Hi\"}\n\n" +
				"event: response.completed\ndata: {\"type\":\"response.completed\"}\n\n",
			want: []want{
				{raw: "event: response.created\ndata: {\"type\":\"response.created\"}\n\n", name: "response.created", data: d(`{"type":"response.created"}`)},
				{raw: "event: response.output_text.delta\ndata: {\"delta\":\"Hi\"}\n\n", name: "response.output_text.delta", data: d(`{"delta":"Hi"}`)},
				{raw: "event: response.completed\ndata: {\"type\":\"response.completed\"}\n\n", name: "response.completed", data: d(`{"type":"response.completed"}`)},
			},
			final: io.EOF,
		},
		{name: "multiline data", in: "data: a\ndata: b\ndata:\n\n", want: []want{{raw: "data: a\ndata: b\ndata:\n\n", data: d("a\nb\n")}}, final: io.EOF},
		{
			name:  "crlf",
			in:    "event: x\r\ndata: a\r\ndata: b\r\n\r\ndata: c\r\n\r\n",
			want:  []want{{raw: "event: x\r\ndata: a\r\ndata: b\r\n\r\n", name: "x", data: d("a\nb")}, {raw: "data: c\r\n\r\n", data: d("c")}},
			final: io.EOF,
		},
		{
			name:  "cr",
			in:    "event: x\rdata: a\rdata: b\r\rdata: c\r\r",
			want:  []want{{raw: "event: x\rdata: a\rdata: b\r\r", name: "x", data: d("a\nb")}, {raw: "data: c\r\r", data: d("c")}},
			final: io.EOF,
		},
		{
			name:  "mixed endings",
			in:    "data: a\r\ndata: b\rdata: c\n\r\n",
			want:  []want{{raw: "data: a\r\ndata: b\rdata: c\n\r\n", data: d("a\nb\nc")}},
			final: io.EOF,
		},
		{
			// "\r\r\n" is a "\r" line ending and then a blank line ended by "\r\n".
			name:  "cr then crlf",
			in:    "data: a\r\r\ndata: b\n\n",
			want:  []want{{raw: "data: a\r\r\n", data: d("a")}, {raw: "data: b\n\n", data: d("b")}},
			final: io.EOF,
		},
		{
			// The "\r\n" after the line's "\n" is one blank line, not two.
			name:  "lf crlf",
			in:    "data: a\n\r\n",
			want:  []want{{raw: "data: a\n\r\n", data: d("a")}},
			final: io.EOF,
		},
		{name: "comment", in: ": keep-alive\n\n", want: []want{{raw: ": keep-alive\n\n"}}, final: io.EOF},
		{name: "comment in event", in: ": c\ndata: x\n:\n\n", want: []want{{raw: ": c\ndata: x\n:\n\n", data: d("x")}}, final: io.EOF},
		{name: "event without data", in: "event: ping\n\n", want: []want{{raw: "event: ping\n\n", name: "ping"}}, final: io.EOF},
		{name: "no space after colon", in: "data:x\n\n", want: []want{{raw: "data:x\n\n", data: d("x")}}, final: io.EOF},
		{name: "two spaces after colon", in: "data:  x \n\n", want: []want{{raw: "data:  x \n\n", data: d(" x ")}}, final: io.EOF},
		{name: "colon in value", in: "data: a: b\n\n", want: []want{{raw: "data: a: b\n\n", data: d("a: b")}}, final: io.EOF},
		{name: "data without colon", in: "data\n\n", want: []want{{raw: "data\n\n", data: d("")}}, final: io.EOF},
		{name: "empty data", in: "data:\ndata:\n\n", want: []want{{raw: "data:\ndata:\n\n", data: d("\n")}}, final: io.EOF},
		{name: "event without colon", in: "event\ndata: x\n\n", want: []want{{raw: "event\ndata: x\n\n", data: d("x")}}, final: io.EOF},
		{name: "last event name wins", in: "event: a\nevent: b\ndata: x\n\n", want: []want{{raw: "event: a\nevent: b\ndata: x\n\n", name: "b", data: d("x")}}, final: io.EOF},
		{name: "case sensitive", in: "Data: x\nEVENT: y\n\n", want: []want{{raw: "Data: x\nEVENT: y\n\n"}}, final: io.EOF},
		{name: "unknown fields", in: "retry: 100\nfoo: bar\ndata: x\n\n", want: []want{{raw: "retry: 100\nfoo: bar\ndata: x\n\n", data: d("x")}}, final: io.EOF},
		{name: "id", in: "id: 42\ndata: x\n\ndata: y\n\n", want: []want{{raw: "id: 42\ndata: x\n\n", data: d("x"), id: "42"}, {raw: "data: y\n\n", data: d("y")}}, final: io.EOF},
		{name: "id with nul ignored", in: "id: 1\nid: a\x00b\ndata: x\n\n", want: []want{{raw: "id: 1\nid: a\x00b\ndata: x\n\n", data: d("x"), id: "1"}}, final: io.EOF},
		{name: "bom", in: "\xEF\xBB\xBFevent: e\ndata: x\n\n", want: []want{{raw: "\xEF\xBB\xBFevent: e\ndata: x\n\n", name: "e", data: d("x")}}, final: io.EOF},
		{name: "bom alone on a line", in: "\xEF\xBB\xBF\ndata: x\n\n", want: []want{{raw: "\xEF\xBB\xBF\n"}, {raw: "data: x\n\n", data: d("x")}}, final: io.EOF},
		{name: "bom only at start", in: "data: a\n\n\xEF\xBB\xBFdata: b\n\n", want: []want{{raw: "data: a\n\n", data: d("a")}, {raw: "\xEF\xBB\xBFdata: b\n\n"}}, final: io.EOF},
		{name: "half a bom", in: "\xEF\xBBdata: b\n\n", want: []want{{raw: "\xEF\xBBdata: b\n\n"}}, final: io.EOF},
		{name: "leading blank lines", in: "\n\r\ndata: x\n\n", want: []want{{raw: "\n"}, {raw: "\r\n"}, {raw: "data: x\n\n", data: d("x")}}, final: io.EOF},
		{
			name: "chat done",
			in:   "data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\ndata: [DONE]\n\n",
			want: []want{
				{raw: "data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n", data: d(`{"choices":[{"delta":{"content":"Hi"}}]}`)},
				{raw: "data: [DONE]\n\n", data: d("[DONE]")},
			},
			final: io.EOF,
		},
		{name: "big event", in: bigEvent, want: []want{{raw: bigEvent, name: "response.completed", data: d(big)}}, final: io.EOF},
		{name: "big multiline crlf", in: bigMulti + "data: z\n\n", want: []want{{raw: bigMulti, data: d(big + "\n" + big[:70000])}, {raw: "data: z\n\n", data: d("z")}}, final: io.EOF},
		{name: "truncated", in: "data: a\n\ndata: b", want: []want{{raw: "data: a\n\n", data: d("a")}, {raw: "data: b", data: d("b")}}, final: ErrTruncated},
		{name: "truncated after line", in: "event: x\ndata: b\n", want: []want{{raw: "event: x\ndata: b\n", name: "x", data: d("b")}}, final: ErrTruncated},
		{name: "truncated after cr", in: "data: b\r", want: []want{{raw: "data: b\r", data: d("b")}}, final: ErrTruncated},
		{name: "truncated big", in: "data: a\n\n" + bigEvent[:len(bigEvent)-1], want: []want{{raw: "data: a\n\n", data: d("a")}, {raw: bigEvent[:len(bigEvent)-1], name: "response.completed", data: d(big)}}, final: ErrTruncated},
		{name: "truncated bom", in: "\xEF\xBB\xBF", want: []want{{raw: "\xEF\xBB\xBF"}}, final: ErrTruncated},
		{name: "final cr ends event", in: "data: b\r\r", want: []want{{raw: "data: b\r\r", data: d("b")}}, final: io.EOF},
		{name: "exactly max", in: "data: 0123456789\n\n", max: 18, want: []want{{raw: "data: 0123456789\n\n", data: d("0123456789")}}, final: io.EOF},
		{name: "over max", in: "data: a\n\ndata: 0123456789\n\ndata: b\n\n", max: 17, want: []want{{raw: "data: a\n\n", data: d("a")}}, final: ErrTooLarge},
		{name: "over max crlf", in: "data: 012345678\r\n\r\n", max: 18, final: ErrTooLarge},
		{name: "over max truncated", in: "data: 0123456789", max: 10, final: ErrTooLarge},
		{name: "over max large", in: "data: a\n\n" + tooLarge, max: 65536, want: []want{{raw: "data: a\n\n", data: d("a")}}, final: ErrTooLarge},
		{name: "no limit", in: tooLarge, max: 0, want: []want{{raw: tooLarge, data: d(tooLarge[6 : len(tooLarge)-2])}}, final: io.EOF},
	}
}

func TestReader(t *testing.T) {
	for _, tt := range readerCases() {
		for _, f := range feeders {
			t.Run(tt.name+"/"+f.name, func(t *testing.T) {
				got, err := readAll(t, f.wrap(strings.NewReader(tt.in)), tt.max)
				if err != tt.final {
					t.Errorf("final error = %v, want %v", err, tt.final)
				}
				if len(got) != len(tt.want) {
					t.Fatalf("got %d events, want %d:\n%v", len(got), len(tt.want), short(got))
				}
				for i, w := range tt.want {
					if got[i] != w.ev() {
						t.Errorf("event %d:\ngot  %v\nwant %v", i, short([]ev{got[i]}), short([]ev{w.ev()}))
					}
				}
				if tt.final != ErrTooLarge {
					if s := concat(got); s != tt.in {
						t.Errorf("concatenated Raw differs from the input")
					}
				}
			})
		}
	}
}

// short formats events, shortening big ones.
func short(evs []ev) string {
	var b strings.Builder
	for _, e := range evs {
		s := e.String()
		if len(s) > 300 {
			s = s[:150] + "..." + s[len(s)-150:]
		}
		b.WriteString(s + "\n")
	}
	return b.String()
}

func concat(evs []ev) string {
	var b strings.Builder
	for _, e := range evs {
		b.WriteString(e.Raw)
	}
	return b.String()
}

// splitReader returns its data in two reads, split at the given index, so that a read boundary
// falls at every position of the input in turn.
func splitReader(s string, at int) io.Reader {
	return io.MultiReader(strings.NewReader(s[:at]), strings.NewReader(s[at:]))
}

// TestReaderSplits checks that the events do not depend on where read boundaries fall, in
// particular between the "\r" and "\n" of a "\r\n".
func TestReaderSplits(t *testing.T) {
	in := "\xEF\xBB\xBFevent: a\r\ndata: 1\r\n\r\n: c\r\rdata: 2\rdata: 3\r\r\ndata\n\n\r\nid: 7\ndata: x"
	want, wantErr := readAll(t, strings.NewReader(in), 0)
	if wantErr != ErrTruncated || len(want) != 6 {
		t.Fatalf("unexpected events %v, %v", short(want), wantErr)
	}
	for at := 0; at <= len(in); at++ {
		got, err := readAll(t, splitReader(in, at), 0)
		if err != wantErr || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("split at %d: got\n%v%v\nwant\n%v%v", at, short(got), err, short(want), wantErr)
		}
	}
}

// TestReaderBufferBoundary puts a "\r\n" (and a lone "\r") across the end of the 32 KiB buffer.
func TestReaderBufferBoundary(t *testing.T) {
	for _, end := range []string{"\r\n\r\n", "\r\r", "\n\n", "\r\r\n"} {
		for pad := bufSize - 8; pad <= bufSize+2; pad++ {
			first := "data: " + strings.Repeat("a", pad-6) + end
			in := first + "data: b\n\n"
			got, err := readAll(t, strings.NewReader(in), 0)
			if err != io.EOF || len(got) < 2 || got[0].Raw != first || got[0].Data != strings.Repeat("a", pad-6) || concat(got) != in {
				t.Fatalf("end %q pad %d: got %v, %v", end, pad, short(got), err)
			}
		}
	}
}

// errReader returns its data and then a non-EOF error.
type errReader struct {
	data string
	err  error
}

func (r *errReader) Read(p []byte) (int, error) {
	if r.data == "" {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

func TestReaderReadError(t *testing.T) {
	boom := errors.New("boom")
	r := NewReader(&errReader{data: "data: a\n\ndata: b", err: boom}, 0)
	e, err := r.Next()
	if err != nil || string(e.Data) != "a" {
		t.Fatalf("first event: %v %v", copyEvent(e), err)
	}
	e, err = r.Next()
	if err != boom || string(e.Raw) != "data: b" || string(e.Data) != "b" {
		t.Fatalf("second event: %v %v, want the partial event with boom", copyEvent(e), err)
	}
	if _, err = r.Next(); err != boom {
		t.Fatalf("after the error: %v, want boom again", err)
	}

	// An error with no partial event is returned with an empty Event.
	r = NewReader(&errReader{data: "data: a\n\n", err: boom}, 0)
	r.Next()
	if e, err := r.Next(); err != boom || e.Raw != nil {
		t.Fatalf("got %v %v, want an empty event and boom", copyEvent(e), err)
	}

	// A reader that makes no progress ends with an error rather than a hang.
	r = NewReader(iotest.ErrReader(nil), 0)
	if _, err := r.Next(); err != io.ErrNoProgress {
		t.Fatalf("got %v, want io.ErrNoProgress", err)
	}
}

// TestReaderBuffered checks that Buffered counts the bytes read but not yet returned.
func TestReaderBuffered(t *testing.T) {
	in := "data: a\n\ndata: bb\n\n: c\n\n"
	r := NewReader(strings.NewReader(in), 0)
	left := len(in)
	for {
		e, err := r.Next()
		if err != nil {
			break
		}
		left -= len(e.Raw)
		if r.Buffered() != left {
			t.Fatalf("after %q Buffered() = %d, want %d", e.Raw, r.Buffered(), left)
		}
	}
	if left != 0 || r.Buffered() != 0 {
		t.Fatalf("left %d, Buffered %d", left, r.Buffered())
	}
}

// TestReaderDoesNotWaitForMore checks that a complete event is returned without reading more
// from the upstream, which may not send anything for a long time.
func TestReaderDoesNotWaitForMore(t *testing.T) {
	for _, in := range []string{"data: a\n\n", "data: a\r\n\r\n", "\n", ": ping\n\n"} {
		pr, pw := io.Pipe()
		go pw.Write([]byte(in)) // the writer never closes: a further read would block forever
		r := NewReader(pr, 0)
		e, err := r.Next()
		if err != nil || string(e.Raw) != in {
			t.Fatalf("got %q %v, want %q", e.Raw, err, in)
		}
		pr.Close()
	}
}

// TestDataCapacity checks that appending to Data cannot overwrite the rest of Raw.
func TestDataCapacity(t *testing.T) {
	r := NewReader(strings.NewReader("data: a\nevent: x\n\n"), 0)
	e, _ := r.Next()
	_ = append(e.Data, "ZZZZZZZ"...)
	if string(e.Raw) != "data: a\nevent: x\n\n" {
		t.Fatalf("Raw changed to %q", e.Raw)
	}
}

func TestAppendEvent(t *testing.T) {
	if got := string(AppendEvent(nil, "response.failed", []byte(`{"a":1}`))); got != "event: response.failed\ndata: {\"a\":1}\n\n" {
		t.Errorf("got %q", got)
	}
	if got := string(AppendEvent([]byte("x"), "", []byte("[DONE]"))); got != "xdata: [DONE]\n\n" {
		t.Errorf("got %q", got)
	}
	if got := string(AppendEvent(nil, "", []byte("a\nb"))); got != "data: a\ndata: b\n\n" {
		t.Errorf("got %q", got)
	}
	if got := string(AppendEvent(nil, "e", nil)); got != "event: e\ndata: \n\n" {
		t.Errorf("got %q", got)
	}

	// Round trips: each event reads back with the same name and data (line breaks in data as
	// "\n", CR and LF dropped from the name) and the same bytes.
	cases := []struct{ name, data, wantName, wantData string }{
		{"response.output_text.delta", `{"delta":"hi"}`, "response.output_text.delta", `{"delta":"hi"}`},
		{"", "[DONE]", "", "[DONE]"},
		{"", "", "", ""},
		{"x", "\n", "x", "\n"},
		{" spaced ", "  two leading spaces", " spaced ", "  two leading spaces"},
		{"e", "a\nb\n\nc\n", "e", "a\nb\n\nc\n"},
		{"e", "a\r\nb\rc", "e", "a\nb\nc"},
		{"evil\r\ndata: x", "ok", "evildata: x", "ok"},
		{":", ":comment-like", ":", ":comment-like"},
		{"big", strings.Repeat("z", 100000), "big", strings.Repeat("z", 100000)},
	}
	var stream []byte
	for _, c := range cases {
		stream = AppendEvent(stream, c.name, []byte(c.data))
	}
	got, err := readAll(t, bytes.NewReader(stream), 0)
	if err != io.EOF || len(got) != len(cases) {
		t.Fatalf("got %d events, %v:\n%v", len(got), err, short(got))
	}
	for i, c := range cases {
		want := ev{Raw: string(AppendEvent(nil, c.name, []byte(c.data))), Name: c.wantName, Data: c.wantData, HasData: true}
		if got[i] != want {
			t.Errorf("case %d:\ngot  %v\nwant %v", i, short(got[i:i+1]), short([]ev{want}))
		}
	}
}

// reference is a deliberately naive parser of a whole stream, written straight from the spec,
// to check the Reader against.
func reference(in []byte) (evs []ev, truncated bool) {
	pos := 0
	if bytes.HasPrefix(in, bom) {
		pos = len(bom)
	}
	start, lineStart := 0, pos
	var cur ev
	var data []string
	field := func(line string) {
		name, value, found := strings.Cut(line, ":")
		if found && name == "" {
			return
		}
		value = strings.TrimPrefix(value, " ")
		switch name {
		case "data":
			data = append(data, value)
		case "event":
			cur.Name = value
		case "id":
			if !strings.Contains(value, "\x00") {
				cur.ID = value
			}
		}
	}
	emit := func(end int) {
		cur.Raw = string(in[start:end])
		if data != nil {
			cur.Data, cur.HasData = strings.Join(data, "\n"), true
		}
		evs = append(evs, cur)
		cur, data, start = ev{}, nil, end
	}
	for pos < len(in) {
		c := in[pos]
		if c != '\r' && c != '\n' {
			pos++
			continue
		}
		line := string(in[lineStart:pos])
		pos++
		if c == '\r' && pos < len(in) && in[pos] == '\n' {
			pos++
		}
		if line == "" {
			emit(pos)
		} else {
			field(line)
		}
		lineStart = pos
	}
	if start < len(in) {
		if lineStart < len(in) {
			field(string(in[lineStart:]))
		}
		emit(len(in))
		truncated = true
	}
	return evs, truncated
}

// checkStream checks the Reader on in against the reference parser, fed whole and one byte at a
// time, with the given limit.
func checkStream(t *testing.T, in []byte, max int) {
	want, truncated := reference(in)
	// The reader stops at the first event larger than max.
	wantErr := io.EOF
	if truncated {
		wantErr = ErrTruncated
	}
	if max > 0 {
		for i, e := range want {
			if len(e.Raw) > max {
				want, wantErr = want[:i], ErrTooLarge
				break
			}
		}
	}
	for _, f := range feeders[:2] {
		got, err := readAll(t, f.wrap(bytes.NewReader(in)), max)
		if err != wantErr {
			t.Fatalf("%s: input %q: error %v, want %v", f.name, in, err, wantErr)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: input %q: got\n%v\nwant\n%v", f.name, in, short(got), short(want))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("%s: input %q: event %d:\ngot  %v\nwant %v", f.name, in, i, got[i], want[i])
			}
		}
		s := concat(got)
		if err == ErrTooLarge {
			if !bytes.HasPrefix(in, []byte(s)) {
				t.Fatalf("%s: input %q: concatenated Raw is not a prefix", f.name, in)
			}
		} else if s != string(in) {
			t.Fatalf("%s: input %q: concatenated Raw %q differs", f.name, in, s)
		}
	}
}

// TestReaderRandom compares the Reader with the reference parser on random streams made of the
// pieces that matter to the parser.
func TestReaderRandom(t *testing.T) {
	pieces := []string{"data", "event", "id", ":", " ", "\r", "\n", "\r\n", "x", "\x00", "\xEF\xBB\xBF", "retry", "Data"}
	rng := rand.New(rand.NewSource(1))
	for n := 0; n < 3000; n++ {
		var b []byte
		for k := rng.Intn(40); k > 0; k-- {
			b = append(b, pieces[rng.Intn(len(pieces))]...)
		}
		checkStream(t, b, rng.Intn(3)*rng.Intn(30))
	}
}

func FuzzReader(f *testing.F) {
	for _, s := range []string{
		"", "data: a\n\n", "event: e\r\ndata: 1\r\n\r\n", "data: a\rdata: b\r\r", ": ping\n\n",
		"\xEF\xBB\xBFdata: x\n\n", "data: [DONE]\n\n", "data: trunc", "id: 1\x00\ndata\n\n\n\r\n",
	} {
		f.Add([]byte(s), uint16(0))
		f.Add([]byte(s), uint16(8))
	}
	f.Fuzz(func(t *testing.T, in []byte, max uint16) {
		checkStream(t, in, int(max))
	})
}

// steadyStream returns n events of the kinds a relay sees most: Responses deltas, Chat
// Completions chunks (with CRLF endings, as some servers send), keep-alives and a multi-line
// data event, none with an id.
func steadyStream(n int) []byte {
	var b []byte
	for i := 0; i < n; i++ {
		switch i % 4 {
		case 0, 1:
			b = fmt.Appendf(b, "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":%d,\"item_id\":\"msg_0123456789abcdef\",\"output_index\":0,\"content_index\":0,\"delta\":\" word\",\"logprobs\":[]}\n\n", i)
		case 2:
			b = fmt.Appendf(b, "data: {\"id\":\"chatcmpl-%d\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" word\"}}]}\r\n\r\n", i)
		case 3:
			b = append(b, ": keep-alive\n\nevent: multi\ndata: line one\ndata: line two\n\n"...)
		}
	}
	return b
}

func TestReaderAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	const perRun = 2000
	r := NewReader(bytes.NewReader(steadyStream(3*perRun)), 0)
	// AllocsPerRun calls the function once to warm up, then once measured: the result is the
	// total number of allocations for perRun events, which must be 0.
	allocs := testing.AllocsPerRun(1, func() {
		for i := 0; i < perRun; i++ {
			if _, err := r.Next(); err != nil {
				t.Fatal(err)
			}
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations for %d small events, want 0", allocs, perRun)
	}
}

// responsesStream is a realistic Responses API stream: the opening events, n small text deltas
// and the closing events, "response.completed" carrying the whole text.
func responsesStream(n int) []byte {
	var b, text []byte
	seq := 0
	event := func(name, data string) {
		b = AppendEvent(b, name, []byte(data))
		seq++
	}
	event("response.created", `{"type":"response.created","sequence_number":0,"response":{"id":"resp_0123456789abcdef","object":"response","created_at":1750000000,"status":"in_progress","model":"gpt-5","output":[]}}`)
	event("response.in_progress", `{"type":"response.in_progress","sequence_number":1,"response":{"id":"resp_0123456789abcdef","object":"response","status":"in_progress"}}`)
	event("response.output_item.added", `{"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"id":"msg_0123456789abcdef","type":"message","status":"in_progress","content":[],"role":"assistant"}}`)
	event("response.content_part.added", `{"type":"response.content_part.added","sequence_number":3,"item_id":"msg_0123456789abcdef","output_index":0,"content_index":0,"part":{"type":"output_text","annotations":[],"text":""}}`)
	for i := 0; i < n; i++ {
		word := fmt.Sprintf(" word%d", i%100)
		text = append(text, word...)
		event("response.output_text.delta", fmt.Sprintf(`{"type":"response.output_text.delta","sequence_number":%d,"item_id":"msg_0123456789abcdef","output_index":0,"content_index":0,"delta":%q,"logprobs":[]}`, seq, word))
	}
	event("response.output_text.done", fmt.Sprintf(`{"type":"response.output_text.done","sequence_number":%d,"item_id":"msg_0123456789abcdef","output_index":0,"content_index":0,"text":%q}`, seq, text))
	event("response.completed", fmt.Sprintf(`{"type":"response.completed","sequence_number":%d,"response":{"id":"resp_0123456789abcdef","status":"completed","output":[{"type":"message","content":[{"type":"output_text","text":%q}]}]}}`, seq, text))
	return b
}

func benchmarkStream(b *testing.B, stream []byte) {
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	for b.Loop() {
		r := NewReader(bytes.NewReader(stream), 0)
		for {
			if _, err := r.Next(); err != nil {
				if err != io.EOF {
					b.Fatal(err)
				}
				break
			}
		}
	}
}

func BenchmarkReader(b *testing.B) {
	benchmarkStream(b, responsesStream(2000))
}

// BenchmarkReaderBigEvent reads one 4 MB "response.completed" event, which goes through the
// scratch buffer.
func BenchmarkReaderBigEvent(b *testing.B) {
	benchmarkStream(b, AppendEvent(nil, "response.completed", bytes.Repeat([]byte(`{"text":"lorem ipsum"},`), 4<<20/23)))
}
