package responses

import (
	"bytes"
	"compress/gzip"
	"io"

	"github.com/klauspost/compress/zstd"
)

// Decode undoes a request body's Content-Encoding (zstd, gzip; anything else is returned as
// is). On an error it returns what it has: the body as on the wire if decoding could not start.
func Decode(encoding string, wire []byte) ([]byte, error) {
	switch encoding {
	case "gzip":
		z, err := gzip.NewReader(bytes.NewReader(wire))
		if err != nil {
			return wire, err
		}
		return io.ReadAll(z)
	case "zstd":
		d, err := zstd.NewReader(nil)
		if err != nil {
			return wire, err
		}
		defer d.Close()
		return d.DecodeAll(wire, nil)
	}
	return wire, nil
}
