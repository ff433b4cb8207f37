// Command icons writes the app icon at the hicolor theme's sizes: icons SRC.png OUTDIR makes
// OUTDIR/SIZExSIZE/apps/codexrelay.png for each size (the .deb's and the macOS icon set's inputs)
// and OUTDIR/codexrelay.ico (the MSI's: PNG entries of 16, 24, 32, 48, 64, 128 and 256 pixels).
package main

import (
	"bytes"
	"encoding/binary"
	"flag"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"

	"golang.org/x/image/draw"
)

var sizes = []int{16, 24, 32, 48, 64, 128, 256}

func main() {
	flag.Usage = func() { fmt.Fprintln(os.Stderr, "usage: icons SRC.png OUTDIR"); flag.PrintDefaults() }
	flag.Parse()
	if flag.NArg() != 2 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(flag.Arg(0), flag.Arg(1)); err != nil {
		fmt.Fprintln(os.Stderr, "icons:", err)
		os.Exit(1)
	}
}

func run(src, out string) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		return fmt.Errorf("%s: %w", src, err)
	}
	var pngs [][]byte
	for _, n := range sizes {
		dst := image.NewNRGBA(image.Rect(0, 0, n, n))
		draw.CatmullRom.Scale(dst, dst.Bounds(), img, img.Bounds(), draw.Src, nil)
		p := filepath.Join(out, fmt.Sprintf("%dx%d", n, n), "apps", "codexrelay.png")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		w, err := os.Create(p)
		if err != nil {
			return err
		}
		var buf bytes.Buffer
		if err := png.Encode(&buf, dst); err != nil {
			w.Close()
			return err
		}
		pngs = append(pngs, buf.Bytes())
		if _, err := w.Write(buf.Bytes()); err != nil {
			w.Close()
			return err
		}
		if err := w.Close(); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(out, "codexrelay.ico"), ico(pngs), 0o644)
}

// ico packs PNG images, in the order of sizes, into one .ico file (Windows Vista and later read
// PNG entries): a 6-byte header, a 16-byte entry per image, then the images.
func ico(pngs [][]byte) []byte {
	var b bytes.Buffer
	le := func(v any) { binary.Write(&b, binary.LittleEndian, v) }
	le([3]uint16{0, 1, uint16(len(pngs))})
	off := 6 + 16*len(pngs)
	for i, p := range pngs {
		n := sizes[i]
		if n >= 256 {
			n = 0 // 0 means 256
		}
		le([4]uint8{uint8(n), uint8(n), 0, 0})
		le([2]uint16{1, 32})
		le([2]uint32{uint32(len(p)), uint32(off)})
		off += len(p)
	}
	for _, p := range pngs {
		b.Write(p)
	}
	return b.Bytes()
}
