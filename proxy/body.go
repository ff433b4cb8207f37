package proxy

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/klauspost/compress/zstd"
)

// DefaultMaxBody is the default limit of a request body, after decompression.
const DefaultMaxBody = 64 << 20

// readBody reads the whole request body once: it checks the content type, undoes a gzip or
// zstd Content-Encoding and enforces limit on both the wire bytes and the decoded bytes (so a
// small compressed bomb cannot expand past it).
func readBody(r *http.Request, limit int64) ([]byte, *apiError) {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || !(mt == "application/json" || strings.HasSuffix(mt, "+json")) {
			return nil, &apiError{Status: http.StatusUnsupportedMediaType, Type: "invalid_request_error",
				Code: "unsupported_media_type", Message: fmt.Sprintf("Content-Type %q is not supported: send application/json", truncate(ct, 64))}
		}
	}
	if r.ContentLength > limit {
		return nil, errTooLarge(limit)
	}
	var src io.Reader = http.MaxBytesReader(nil, r.Body, limit)
	enc := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding")))
	switch enc {
	case "", "identity":
		enc = ""
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(src)
		if err != nil {
			return nil, bodyError(err, limit, "gzip")
		}
		defer zr.Close()
		src = zr
	case "zstd":
		zr, err := zstd.NewReader(src, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxMemory(uint64(limit)+1), zstd.WithDecoderMaxWindow(uint64(min(limit, 1<<29))))
		if err != nil {
			return nil, bodyError(err, limit, "zstd")
		}
		defer zr.Close()
		src = zr
	default:
		return nil, &apiError{Status: http.StatusUnsupportedMediaType, Type: "invalid_request_error",
			Code: "unsupported_encoding", Message: fmt.Sprintf("Content-Encoding %q is not supported: use gzip, zstd or none", truncate(enc, 32))}
	}
	var buf bytes.Buffer
	if r.ContentLength > 0 && enc == "" {
		buf.Grow(int(r.ContentLength) + bytes.MinRead)
	}
	n, err := buf.ReadFrom(io.LimitReader(src, limit+1))
	if err != nil {
		return nil, bodyError(err, limit, enc)
	}
	if n > limit {
		return nil, errTooLarge(limit)
	}
	return buf.Bytes(), nil
}

func errTooLarge(limit int64) *apiError {
	return &apiError{Status: http.StatusRequestEntityTooLarge, Type: "invalid_request_error", Code: "request_too_large",
		Message: fmt.Sprintf("request body is larger than the relay's limit of %d MiB", limit>>20)}
}

func bodyError(err error, limit int64, enc string) *apiError {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) || errors.Is(err, zstd.ErrDecoderSizeExceeded) || errors.Is(err, zstd.ErrWindowSizeExceeded) {
		return errTooLarge(limit)
	}
	what := "request body"
	if enc != "" {
		what = enc + " request body"
	}
	msg := fmt.Sprintf("could not read the %s: %v", what, err)
	if errors.Is(err, io.ErrUnexpectedEOF) {
		msg = "the request body is truncated or its compression is corrupt"
	}
	return &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: "invalid_body", Message: msg}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
